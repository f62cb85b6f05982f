// Sends a chat to an alpineagents server with the AI SDK's DefaultChatTransport and reads the UI message stream
// with readUIMessageStream; prints the last UIMessage snapshot and every error as JSON.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, chatId, prompt] = process.argv.slice(2);
const transport = new DefaultChatTransport({ api: url });
const chunks = await transport.sendMessages({
  trigger: "submit-message",
  chatId,
  messageId: undefined,
  abortSignal: undefined,
  messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: prompt }] }],
});
const errors = [];
let last = null;
let snapshots = 0;
for await (const message of readUIMessageStream({ stream: chunks, onError: (error) => errors.push(String(error)) })) {
  last = message;
  snapshots += 1;
}
console.log(JSON.stringify({ last, errors, snapshots }));
