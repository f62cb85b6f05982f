// An AI SDK chat whose tool call waits for approval: reads the approval request, answers it as useChat's
// addToolApprovalResponse does (the tool part gets approval {id, approved}), sends the conversation again and
// prints the parts of both assistant messages and every error as JSON.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, chatId, prompt, answer] = process.argv.slice(2);
const transport = new DefaultChatTransport({ api: url });
const errors = [];

async function send(messages) {
  const chunks = await transport.sendMessages({ trigger: "submit-message", chatId, messageId: undefined, abortSignal: undefined, messages });
  let last = null;
  for await (const next of readUIMessageStream({ stream: chunks, onError: (error) => errors.push(String(error)) })) last = next;
  return last;
}

const user = { id: "u1", role: "user", parts: [{ type: "text", text: prompt }] };
const asked = await send([user]);
const waiting = asked.parts.find((part) => part.state === "approval-requested");
const answered = structuredClone(asked);
for (const part of answered.parts) {
  if (part === undefined || part.toolCallId !== waiting?.toolCallId) continue;
  part.state = "approval-responded";
  part.approval = { id: waiting.approval.id, approved: answer === "yes", reason: answer === "yes" ? undefined : "not now" };
}
const after = await send([user, answered]);
console.log(JSON.stringify({ asked: asked.parts, after: after.parts, errors }));
