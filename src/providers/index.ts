export { AnthropicProvider } from "./anthropic";
export { classifyError, isContextOverflowText } from "./errors";
export { parseTextToolCalls } from "./fallback-tool-calls";
export { computeCost, loadCatalog, ModelCatalog, readModelsFile, resolveModel } from "./models";
export { OpenAiCompletionsProvider } from "./openai-completions";
export { OpenAiResponsesProvider } from "./openai-responses";
export { createProvider, type ProviderConfig } from "./registry";
export type * from "./types";
