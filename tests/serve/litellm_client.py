"""Run by LiteLLM's own interpreter (its venv), never imported by the tests: LiteLLM's Python SDK
as a client of `loomc serve`, streaming and not. Prints one JSON object per call.

    python litellm_client.py BASE_URL MODEL   (the key comes from LOOMC_TEST_SERVE_KEY)
"""

import json
import os
import sys

import litellm


def main() -> None:
    base, model = sys.argv[1], sys.argv[2]
    key = os.environ["LOOMC_TEST_SERVE_KEY"]
    messages = [{"role": "user", "content": "Explain DNS briefly."}]
    common = {"model": f"openai/{model}", "api_base": base, "api_key": key, "messages": messages}
    plain = litellm.completion(**common, max_tokens=300, user="litellm-test")
    extra = plain.model_extra or {}
    print(
        json.dumps(
            {
                "mode": "plain",
                "content": plain.choices[0].message.content,
                "finish_reason": plain.choices[0].finish_reason,
                "usage": plain.usage.model_dump(),
                "loomc": extra.get("loomc"),
            }
        )
    )
    text, usage = "", None
    for chunk in litellm.completion(**common, stream=True, stream_options={"include_usage": True}):
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
        found = getattr(chunk, "usage", None)
        if found is not None:
            usage = found.model_dump()
    print(json.dumps({"mode": "stream", "content": text, "usage": usage}))
    try:
        litellm.completion(**{**common, "api_key": "wrong-key"})
    except litellm.AuthenticationError as exc:
        print(json.dumps({"mode": "auth", "status": exc.status_code, "message": str(exc)}))


if __name__ == "__main__":
    main()
