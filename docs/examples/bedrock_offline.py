"""Amazon Bedrock's Converse API, for any model it serves. Building the adapter touches no network and reads no
credentials: boto3 reads them (environment, profile, SSO, instance role) when the first request is made."""

from alpineagents import Agent, Price
from alpineagents.models import Bedrock, resolve_model

models = [
    resolve_model("bedrock/us.amazon.nova-pro-v1:0", region="us-east-1"),  # an inference profile
    Bedrock("anthropic.claude-sonnet-4-5-20250929-v1:0", region="us-west-2", thinking=4096, cache=True),
    Bedrock("meta.llama3-3-70b-instruct-v1:0", profile="work", price=Price(input=0.72, output=0.72)),
]
for model in models:
    print(f"{type(model).__name__:8} {model.name:44} region {model.region}, cache {model.cache}")

agent = Agent("bedrock/us.amazon.nova-pro-v1:0")  # an Agent takes the same strings
print(type(agent.model).__name__, agent.model.provider)
