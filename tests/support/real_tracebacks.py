"""Real tracebacks, as the threads they come from print them, shared by the tests of what judges them."""

from __future__ import annotations

# huggingface/autotrain-advanced#365: requests' HTTPError raised under huggingface_hub (a gated repo)
HUB_REFUSED = """\
Traceback (most recent call last):
  File "/app/env/lib/python3.10/site-packages/huggingface_hub/utils/_errors.py", line 261, in hf_raise_for_status
    response.raise_for_status()
  File "/app/env/lib/python3.10/site-packages/requests/models.py", line 1021, in raise_for_status
    raise HTTPError(http_error_msg, response=self)
requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/meta-llama/Llama-2-7b-hf/resolve/main/config.json
"""  # noqa: E501

# bmartacho/UniPose#35: the project's own loop unpacks what its loader returns wrongly
UNPACK = """\
Traceback (most recent call last):
  File "unipose.py", line 299, in <module>
    model.training(epoch)
  File "unipose.py", line 126, in training
    for i, (input, heatmap, centermap, img_path) in enumerate(tbar):
ValueError: too many values to unpack (expected 4)
"""
