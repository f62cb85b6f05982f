// Runs an AG-UI agent served by alpineagents with @ag-ui/client's HttpAgent, twice on one thread, and prints
// what the client saw as JSON: the event types, the errors, and the messages the client holds at the end.
import { HttpAgent } from "@ag-ui/client";

const [url, threadId, first, second] = process.argv.slice(2);
const agent = new HttpAgent({ url, threadId });
const seen = [];
const errors = [];
const results = [];
for (const [n, prompt] of [first, second].entries()) {
  agent.addMessage({ id: `u${n}`, role: "user", content: prompt });
  const outcome = await agent.runAgent(
    { runId: `run${n}` },
    {
      onEvent({ event }) { seen.push(event.type); },
      onRunErrorEvent({ event }) { errors.push(event.message); },
    },
  );
  results.push(outcome.result ?? null);
}
console.log(JSON.stringify({ seen, errors, results, messages: agent.messages }));
