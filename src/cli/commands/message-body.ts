import type { InferRequestType } from "hono/client";
import type { ApiClient } from "../../api-client/client";

type PostMessage = ApiClient["api"]["v1"]["sessions"][":sessionId"]["messages"]["$post"];
/** The body of `POST /v1/sessions/{id}/messages`, as the API declares it. */
export type MessageBody = InferRequestType<PostMessage>["json"];
