"""Gemini, on the Gemini API or on Vertex AI. Building the adapter touches no network and reads no key; the first
request does, and without a key it says where one goes."""

from alpineagents import Agent, Price
from alpineagents.errors import AuthError
from alpineagents.models import Gemini, resolve_model
from alpineagents.types import Message, Request

models = [
    resolve_model("google/gemini-3-pro"),  # reads GOOGLE_API_KEY or GEMINI_API_KEY at the first request
    resolve_model("gemini-2.5-flash", thinking=False),  # a bare gemini-... name works too; thinking off
    Gemini("gemini-3-pro", thinking="high", price=Price(input=2, output=12)),  # thought summaries, a price
    Gemini("gemini-2.5-pro", vertexai=True, project="my-project", location="europe-west4"),  # Vertex AI
]
for model in models:
    print(f"{type(model).__name__:8} {model.provider:8} {model.name:18} window {model.context_window:,}")

agent = Agent("google/gemini-3-pro", reporter=None)  # an Agent takes the same strings
try:
    agent.model.respond(Request(None, (Message.user("Hello"),)))
except AuthError as error:  # no key anywhere: nothing was sent
    print(str(error).splitlines()[1])
