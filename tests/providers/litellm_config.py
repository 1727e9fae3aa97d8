"""LiteLLM proxy settings shared by the fixture and the tests: mock models, no upstream."""

MASTER_KEY = "sk-loomc-test-master-7f3a9c"

LITELLM_CONFIG = f"""
model_list:
  - model_name: mock-ok
    litellm_params:
      model: openai/mock-ok
      api_key: fake
      mock_response: "The capital of France is Paris. It has been the capital since 987."
  - model_name: mock-429
    litellm_params:
      model: openai/mock-429
      api_key: fake
      mock_response: "litellm.RateLimitError"
  - model_name: mock-500
    litellm_params:
      model: openai/mock-500
      api_key: fake
      api_base: http://127.0.0.1:9/v1
general_settings:
  master_key: {MASTER_KEY}
litellm_settings:
  num_retries: 0
"""
