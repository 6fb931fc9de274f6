/** How an S3 answer is read: status and "not found" the same way for every caller. */
import { NoSuchKey, NotFound, S3ServiceException } from "@aws-sdk/client-s3";
import { isNotFound, s3HttpStatus } from "../../../src/store/s3-requests";

const metadata = (httpStatusCode?: number) => ({ httpStatusCode, attempts: 1, totalRetryDelay: 0 });

test("a 404 answer and a NoSuchKey error are 'not found'; other failures are not", () => {
  expect(isNotFound(new NotFound({ message: "gone", $metadata: metadata(404) }))).toBe(true);
  expect(isNotFound(new NoSuchKey({ message: "gone", $metadata: metadata(undefined) }))).toBe(true);
  const denied = new S3ServiceException({ name: "AccessDenied", $fault: "client", $metadata: metadata(403) });
  expect(isNotFound(denied)).toBe(false);
  expect(s3HttpStatus(denied)).toBe(403);
  expect(isNotFound(new Error("socket hang up"))).toBe(false);
  expect(isNotFound(undefined)).toBe(false);
});
