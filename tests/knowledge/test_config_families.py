"""Configuration message families in the signatures, read whole through triage (knowledge/signatures/config.yaml):
settings, command lines, repos and resource requests that the programs refuse, in their own words.

Every line is one a real program prints: a thread where it was seen, or the source file that prints it.
"""

from __future__ import annotations

from pathlib import Path

from triage_lines import cited, triage_lines

from crashcart.knowledge.taxonomy import FailureClass

CONFIG = FailureClass.CONFIG_ERROR


def test_hydras_compact_composition_errors_are_the_config(tmp_path: Path) -> None:
    # facebookresearch/hydra:hydra/_internal/utils.py prints a CompactHydraException as its bare message and the
    # footer; the message of a group option that does not exist is defaults_list.py's
    report = triage_lines(
        tmp_path,
        "In 'config': Could not find 'model/llama3'",
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.structured_config_error")


def test_hydras_footer_alone_accuses_no_config(tmp_path: Path) -> None:
    # the footer follows every error of a Hydra app, the user's own bugs too
    report = triage_lines(tmp_path, "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.")
    assert report.diagnosis.failure_class is not CONFIG


def test_absl_refusing_the_flags_is_the_command_line(tmp_path: Path) -> None:
    # abseil/abseil-py:absl/app.py parse_flags_with_usage, the message of absl/flags/_validators.py
    report = triage_lines(
        tmp_path,
        "FATAL Flags parsing error: flag --workdir=None: Flag --workdir must have a value other than None.",
        "Pass --helpshort or --helpfull to see help on flags.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.argparse_error")


def test_trainer_settings_the_framework_refuses_are_the_config(tmp_path: Path) -> None:
    for line in (
        # huggingface/transformers:src/transformers/training_args.py, __post_init__
        "ValueError: --load_best_model_at_end requires the save and eval strategy to match, except when"
        ' --save_strategy="best", but found',
        "ValueError: Your setup doesn't support bf16/gpu. You need to assign use_cpu if you want to train the model"
        " on CPU.",
        # huggingface/accelerate:src/accelerate/accelerator.py, Accelerator.__init__
        "ValueError: bf16 mixed precision requires PyTorch >= 1.10 and a supported device.",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.training_arguments_refused"), line


def test_the_hub_refusing_a_gated_or_missing_repo_is_the_config(tmp_path: Path) -> None:
    # huggingface/huggingface_hub:src/huggingface_hub/errors.py, GatedRepoError as its docstring shows it
    report = triage_lines(
        tmp_path,
        "huggingface_hub.errors.GatedRepoError: 403 Client Error. (Request ID: ViT1Bf7O_026LGSQuVqfa)",
        "",
        "Cannot access gated repo for url https://huggingface.co/api/models/ardent-figment/gated-model.",
        "Access to model ardent-figment/gated-model is restricted and you are not in the authorized list.",
        "Visit https://huggingface.co/ardent-figment/gated-model to ask for access.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.model_path")


def test_srun_refusing_the_request_is_the_config_but_not_a_controller_timeout(tmp_path: Path) -> None:
    # SchedMD/slurm:src/common/slurm_errno.c texts in srun's "Unable to allocate resources: %s"
    refused = triage_lines(tmp_path, "srun: error: Unable to allocate resources: Invalid partition name specified")
    assert (refused.diagnosis.failure_class, cited(refused)) == (CONFIG, "config.slurm_request")
    timed_out = triage_lines(
        tmp_path, "srun: error: Unable to allocate resources: Socket timed out on send/recv operation"
    )
    assert timed_out.diagnosis.failure_class is not CONFIG


def test_a_deepspeed_batch_setting_derived_as_zero_is_the_config(tmp_path: Path) -> None:
    # deepspeedai/DeepSpeed:deepspeed/runtime/config.py, _batch_assertion
    report = triage_lines(tmp_path, "AssertionError: Gradient accumulation steps: 0 has to be greater than 0")
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.batch_size_mismatch")


def test_a_model_whose_code_needs_trust_remote_code_is_the_loading_setting(tmp_path: Path) -> None:
    # huggingface/transformers:src/transformers/dynamic_module_utils.py, when the prompt for custom code times out
    report = triage_lines(
        tmp_path,
        "ValueError: Loading this model requires you to execute custom code contained in the model repository on your"
        " local machine. Please set the option `trust_remote_code=True` to permit loading of this model.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.model_path")


def test_hydras_other_bare_errors_are_the_config(tmp_path: Path) -> None:
    footer = "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace."
    for line in (
        # facebookresearch/hydra:hydra/_internal/instantiate/_instantiate2.py, a _target_ that does not import
        "Error locating target 'models.unet.UNet', set env var HYDRA_FULL_ERROR=1 to see chained exception.",
        # facebookresearch/hydra:hydra/_internal/config_loader_impl.py, a comma value without --multirun
        "Sweep parameters 'lr=0.1,0.01' requires --multirun",
    ):
        report = triage_lines(tmp_path, line, footer)
        assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.structured_config_error"), line


def test_torchrun_and_lightning_refusing_the_process_layout_are_the_config(tmp_path: Path) -> None:
    for line in (
        'RuntimeError: nnodes=1:2:4 is not in "MIN:MAX" format',  # pytorch/pytorch:torch/distributed/run.py
        "ValueError: Unsupported nproc_per_node value: gpus",  # pytorch/pytorch:torch/distributed/run.py
        # Lightning-AI/pytorch-lightning:src/lightning/fabric/accelerators/cuda.py, find_usable_cuda_devices
        "ValueError: You requested to find 8 devices but this machine only has 4 GPUs.",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.process_count"), line


def test_peft_refusing_the_adapter_settings_is_the_config(tmp_path: Path) -> None:
    for line in (
        # huggingface/peft:src/peft/tuners/tuners_utils.py, inject_adapter (the source's format)
        "ValueError: Target modules {'q_proj', 'v_proj'} not found in the base model. Please check the target modules"
        " and try again.",
        # huggingface/peft:src/peft/tuners/lora/model.py, a target_modules name matching a layer LoRA cannot wrap
        "ValueError: Target module Dropout(p=0.1, inplace=False) is not supported. Currently, only the following"
        " modules are supported: `torch.nn.Linear`, `torch.nn.Embedding`, `torch.nn.Conv1d`, `torch.nn.Conv2d`,"
        " `torch.nn.Conv3d`, `transformers.pytorch_utils.Conv1D`, `torch.nn.MultiheadAttention.`.",
        # huggingface/transformers:src/transformers/trainer_utils.py, validate_quantization_for_training
        "ValueError: You cannot perform fine-tuning on purely quantized models. Please attach trainable adapters on top"
        " of the quantized model to correctly perform fine-tuning. Please see: https://huggingface.co/docs/transformers/peft"
        " for more details",
        # huggingface/peft:src/peft/config.py, from_pretrained on a path without the adapter's config
        "ValueError: Can't find 'adapter_config.json' at 'output/checkpoint-500'",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.peft_adapter"), line


def test_vllm_refusing_a_context_longer_than_the_model_is_the_config_its_allowed_warning_not(tmp_path: Path) -> None:
    # vllm-project/vllm:vllm/config/model.py, _get_and_verify_max_len: the raised form, then the warning it logs instead
    # when VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (the source's format)
    msg = (
        "User-specified max_model_len (32768) is greater than the derived max_model_len (max_position_embeddings=4096"
        " or model_max_length=None in model's config.json)."
    )
    refused = triage_lines(
        tmp_path,
        f"ValueError: {msg} To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."
        " VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution.",
    )
    assert (refused.diagnosis.failure_class, cited(refused)) == (CONFIG, "config.vllm_engine_refused")
    allowed = triage_lines(tmp_path, f"{msg} VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution.")
    assert allowed.diagnosis.failure_class is not CONFIG


def test_vllm_refusing_a_dtype_or_quantization_the_gpu_lacks_is_the_config(tmp_path: Path) -> None:
    for line in (
        # vllm-project/vllm:vllm/platforms/cuda.py, check_if_supports_dtype (the source's format)
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has"
        " compute capability 7.5. You can use float16 instead by explicitly setting the `dtype` flag in CLI, for"
        " example: --dtype=half.",
        # vllm-project/vllm:vllm/config/vllm.py, the quantization method's minimum capability
        "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 89. Current"
        " capability: 80.",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.vllm_engine_refused"), line


def test_nccls_newer_words_for_two_ranks_on_one_gpu_are_the_config(tmp_path: Path) -> None:
    # NVIDIA/nccl:src/init.cc, read with strings from libnccl.so 2.32.3 (the older 'Duplicate GPU detected' reworded)
    report = triage_lines(
        tmp_path,
        "Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this"
        " configuration.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.duplicate_gpu")


def test_a_world_size_that_is_not_the_product_of_the_parallel_degrees_is_the_config(tmp_path: Path) -> None:
    for line in (
        # open-compass/VLMEvalKit#561: torchrun started 8 processes around a vLLM engine with tp=1, pp=1
        "RuntimeError: world_size (8) is not equal to tensor_model_parallel_size (1) x pipeline_model_parallel_size"
        " (1). ",
        # huggingface/optimum-nvidia#68: TensorRT-LLM's WorldConfig, engines built for tp=2 loaded in one process
        "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp"
        " (/opt/optimum-nvidia/third-party/tensorrt-llm/cpp/tensorrt_llm/runtime/worldConfig.cpp:89)",
        # pytorch/torchtitan:torchtitan/distributed/parallel_dims.py, ParallelDims' check (the source's format)
        "AssertionError: Invalid parallel dims: dp_replicate(1) * dp_shard(4) * cp(1) * tp(3) * pp(1) != WORLD_SIZE(4)",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.parallel_product_mismatch"), line


def test_two_settings_a_framework_refuses_together_are_the_config(tmp_path: Path) -> None:
    for line in (
        # stanleylsx/llms_tool#73: QLoRA's device_map under ZeRO-3 (huggingface/transformers:modeling_utils.py)
        "ValueError: DeepSpeed Zero-3 is not compatible with `low_cpu_mem_usage=True` or with passing a `device_map`.",
        # deepspeedai/DeepSpeed:deepspeed/runtime/pipe/engine.py, PipelineEngine's assertion
        "AssertionError: ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.unsupported_combination"), line


def test_a_stack_that_lacks_a_feature_is_no_refused_setting_pair(tmp_path: Path) -> None:
    # pytorch/pytorch:torch/_dynamo/eval_frame.py (torch 2.1): the interpreter, not two of the job's settings
    report = triage_lines(tmp_path, "RuntimeError: Dynamo is not supported on Python 3.12+")
    assert cited(report) != "config.unsupported_combination"


def test_resuming_from_a_path_that_holds_no_checkpoint_is_the_config(tmp_path: Path) -> None:
    # artidoro/qlora#27: transformers' Trainer._load_from_checkpoint, after the source line that raises it
    report = triage_lines(
        tmp_path,
        '  File "/workspace/anaconda3/envs/qlora310/lib/python3.10/site-packages/transformers/trainer.py", line 2159,'
        " in _load_from_checkpoint",
        '    raise ValueError(f"Can\'t find a valid checkpoint at {resume_from_checkpoint}")',
        "ValueError: Can't find a valid checkpoint at ./output/checkpoint-500",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.resume_checkpoint_path")
    assert report.diagnosis.evidence[0].line == 3


def test_a_trainer_setting_its_enum_does_not_have_is_the_config(tmp_path: Path) -> None:
    # bmaltais/kohya_ss#3064: transformers' ExplicitEnum._missing_ (utils/generic.py) under the frame that raises it
    report = triage_lines(
        tmp_path,
        '  File "/kohya_ss/venv/lib/python3.10/site-packages/transformers/utils/generic.py", line 496, in _missing_',
        "    raise ValueError(",
        "ValueError: COSINE_WITH_MIN_LR is not a valid SchedulerType, please select one of ['linear', 'cosine',"
        " 'cosine_with_restarts', 'polynomial', 'constant', 'constant_with_warmup', 'inverse_sqrt',"
        " 'reduce_lr_on_plateau', 'cosine_with_min_lr', 'warmup_stable_decay']`",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.enum_setting_refused")


def test_an_environment_read_converted_without_a_default_is_the_config_when_the_traceback_is_lost(
    tmp_path: Path,
) -> None:
    # abhishekkrthakur/mlframework#6, as the thread shows it: no header, the exception line in markdown bold
    report = triage_lines(
        tmp_path,
        ' File "../src/train.py", line 12, in <module>',
        '    FOLD = int(os.environ.get("FOLD"))',
        "**TypeError: int() argument must be a string, a bytes-like object or a number, not 'NoneType'**",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.unset_env_conversion")


def test_a_quantized_model_placed_where_the_rank_cannot_train_it_is_the_config(tmp_path: Path) -> None:
    # yangjianxin1/Firefly#270: QLoRA under torchrun, accelerate's prepare_model refusal after the launch command
    report = triage_lines(
        tmp_path,
        "torchrun --nproc_per_node=4 train.py --train_args_file train_args/sft/qlora/qwen2-7b-sft-qlora.json",
        "ValueError: You can't train a model that has been loaded in 8-bit precision on a different device than the one"
        " you're training on. Make sure you loaded the model on the correct device using for example"
        " `device_map={'':torch.cuda.current_device()}you're training on. Make sure you loaded the model on the correct"
        " device using for example `device_map={'':torch.cuda.current_device() or"
        " device_map={'':torch.xpu.current_device()}",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.quantized_model_placement")


def test_a_config_its_pydantic_schema_refuses_is_the_config(tmp_path: Path) -> None:
    # eole-nlp/eole#66: the TrainConfig pydantic 2 validates, with keys an older release's YAML still carries
    report = triage_lines(
        tmp_path,
        "    self.__pydantic_validator__.validate_python(data, self_instance=self)",
        "pydantic_core._pydantic_core.ValidationError: 46 validation errors for TrainConfig",
        "data.corpus_1.src_lang",
        "  Extra inputs are not permitted [type=extra_forbidden, input_value='fr', input_type=str]",
        "    For further information visit https://errors.pydantic.dev/2.8/v/extra_forbidden",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.schema_validation")


def test_a_required_key_jsonargparse_misses_is_the_config(tmp_path: Path) -> None:
    # Lightning-AI/pytorch-lightning#19032: jsonargparse's check_required, as a chained TypeError
    report = triage_lines(
        tmp_path,
        "Traceback (most recent call last):",
        '  File "/home/testEnv/lib/python3.9/site-packages/jsonargparse/core.py", line 1047, in check_required',
        '    raise TypeError(f\'Key "{prefix}{reqkey}" is required but not included in config object or its value'
        " is None.') from ex",
        'TypeError: Key "params" is required but not included in config object or its value is None.',
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.jsonargparse_check")


def test_an_audio_path_the_os_will_not_open_is_the_config(tmp_path: Path) -> None:
    # facebookresearch/svoice#64: libsndfile's SF_ERR_SYSTEM on open; the manifests needed full paths
    report = triage_lines(
        tmp_path, "RuntimeError: Error opening 'debug/mix/2803-161169-0001_7976-110523-0004.wav': System error."
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.audio_path_unopenable")


def test_a_batch_the_mesh_axes_do_not_divide_is_the_config(tmp_path: Path) -> None:
    # LargeWorldModel/LWM#39: JAX's shard_map under a mesh_dim of (1, 8, 1, 1) and a batch of 1
    report = triage_lines(
        tmp_path,
        "    attn_output = ring_attention_sharded(",
        "ValueError: shard_map applied to the function 'functools.partial(<jax._src.custom_derivatives.custom_vjp"
        " object at 0x7f9b40199ab0>, axis_name='sp')' was given argument arrays with axis sizes that are not evenly"
        " divisible by the corresponding mesh axis sizes:",
        "",
        "The mesh given has shape (1, 8, 1, 1) with corresponding axis names ('dp', 'fsdp', 'tp', 'sp').",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.not_divisible")


def test_an_argument_python_fire_cannot_map_is_the_command_line(tmp_path: Path) -> None:
    # LianjiaTech/BELLE#102: fire's refusal, then torchrun's summary of the child that exited with 2
    report = triage_lines(
        tmp_path,
        "ERROR: Could not consume arg: --model_config_file",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 2) local_rank: 1 (pid: 37835) of binary:"
        " /home/xxx/miniconda3/envs/llama/bin/python3.10",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.argparse_error")


def test_a_dataset_config_load_dataset_does_not_find_is_the_config(tmp_path: Path) -> None:
    # salesforce/DialogStudio#9, and the message huggingface/datasets#203 adds, with its list of configs
    for lines in (
        ("ValueError: BuilderConfig 'MULTIWOZ2_2' not found. Available: ['default']",),
        (
            "ValueError: Config name is missing.",
            "Please pick one among the available configs: ['cola', 'sst2', 'mrpc', 'qqp', 'stsb', 'mnli',"
            " 'mnli_mismatched', 'mnli_matched', 'qnli', 'rte', 'wnli', 'ax']",
        ),
    ):
        report = triage_lines(tmp_path, *lines)
        assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.hf_dataset_config"), lines


def test_a_deepspeed_config_path_that_does_not_exist_is_the_config(tmp_path: Path) -> None:
    # Entropy-xcy/bitnet158#2: accelerate's HfDeepSpeedConfig on a --deepspeed path it cannot open
    report = triage_lines(
        tmp_path,
        "ValueError: Expected a string path to an existing deepspeed config, or a dictionary, or a base64 encoded"
        " string. Received: ds_config.json",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.deepspeed_config_path")


def test_a_resource_request_no_ray_node_type_can_hold_is_the_config(tmp_path: Path) -> None:
    # rllm-org/rllm#35: 8 GPUs in one STRICT_PACK group on a one-GPU cluster, with the autoscaler's status
    report = triage_lines(
        tmp_path,
        "(autoscaler +34s) Error: No available node types can fulfill resource request defaultdict(<class 'float'>,"
        " {'CPU': 8.0, 'GPU': 8.0}). Add suitable node types to this cluster to resolve this issue.",
        "Demands:",
        " {'GPU': 1.0, 'CPU': 1.0} * 8 (STRICT_PACK): 1+ pending placement groups",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.ray_unfulfillable_request")


def test_the_autoscalers_spurious_node_resource_request_accuses_no_config(tmp_path: Path) -> None:
    # ray-project/xgboost_ray#222: a request for a node's own resource, on a cluster that had the resources
    report = triage_lines(
        tmp_path,
        "Error: No available node types can fulfill resource request {'node:************': 0.01}. Add suitable node"
        " types to this cluster to resolve this issue.",
    )
    assert report.diagnosis.failure_class is not CONFIG


def test_sox_on_a_manifest_path_that_is_not_there_is_the_config(tmp_path: Path) -> None:
    # speechbrain/speechbrain#1547: SoX's open failure behind tqdm, then a DataLoader traceback the log cut
    report = triage_lines(
        tmp_path,
        "speechbrain.utils.epoch_loop - Going into epoch 1",
        "  0% 0/1 [00:00<?, ?it/s]formats: can't open input file `./Speech Brain/converteddata/01/01-1_01.wav': No such"
        " file or directory",
        "speechbrain.core - Exception:",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.7/dist-packages/torch/utils/data/_utils/fetch.py", line 49, in fetch',
        "    data = [self.dataset[idx] for idx in possibly_batched_index]",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.audio_path_unopenable")


def test_a_path_that_is_no_lmdb_is_the_config(tmp_path: Path) -> None:
    # BVLC/caffe#6173: Caffe's glog check on mdb_env_open; the maintainer: a wrong path in the prototxt
    report = triage_lines(
        tmp_path,
        "I0115 10:13:29.053575  8956 layer_factory.cpp:58] Creating layer data",
        "F0115 10:13:29.136234  8956 db_lmdb.hpp:15] Check failed: mdb_status == 0 (-30793 vs. 0) MDB_INVALID: File is"
        " not an LMDB file",
        "*** Check failure stack trace: ***",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.lmdb_path_not_a_db")


def test_a_tracker_without_its_api_key_is_the_config(tmp_path: Path) -> None:
    # Kent0n-Li/ChatDoctor#15 and allenai/comet-atomic-2020#20: wandb's login check, as logged and as raised
    for line in (
        "wandb: ERROR api_key not configured (no-tty). call wandb.login(key=[your_api_key])",
        "wandb.errors.UsageError: api_key not configured (no-tty). call wandb.login(key=[your_api_key])",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.tracker_credentials_missing"), line


def test_a_directory_made_at_the_filesystem_root_is_the_config(tmp_path: Path) -> None:
    # matterport/Mask_RCNN#2880: os.makedirs of a log_dir that lost its base, under an IPython traceback
    report = triage_lines(
        tmp_path,
        "-> 2347             os.makedirs(self.log_dir)",
        "OSError: [Errno 30] Read-only file system: '//logdir'",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.root_path_read_only")


def test_dataparallel_device_ids_beyond_the_gpus_there_are_are_the_config(tmp_path: Path) -> None:
    # lzx1413/PytorchSSD#50: torch.cuda.get_device_properties' check under DataParallel's _check_balance
    report = triage_lines(
        tmp_path,
        "Traceback (most recent call last):",
        '  File "train_test.py", line 183, in <module>',
        "    net = torch.nn.DataParallel(net, device_ids=list(range(args.ngpu)))",
        '  File "/home/cv2018/anaconda3/lib/python3.6/site-packages/torch/cuda/__init__.py", line 292, in'
        " get_device_properties",
        '    raise AssertionError("Invalid device id")',
        "AssertionError: Invalid device id",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.invalid_device_ordinal")


def test_a_pbs_queue_refusing_the_requested_walltime_is_the_jobs_config(tmp_path: Path) -> None:
    # E3SM-Project/E3SM#1473: CIME submitting to a queue whose max walltime is shorter than the request
    report = triage_lines(
        tmp_path,
        "Submitting job script qsub    -q shared -l walltime=03:00:00 -A ACME case.test ",
        "ERROR: Couldn't match jobid_pattern '^(\\S+)$' within submit output:",
        " 'qsub: Job exceeds queue resource limits MSG=cannot satisfy queue max walltime requirement'",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.pbs_request")


def test_resuming_megatron_with_a_changed_lr_schedule_is_the_config(tmp_path: Path) -> None:
    # https://github.com/bigscience-workshop/bigscience/blob/master/train/tr8b-104B/chronicles.md (BNB exp. 6)
    line = "AssertionError: AnnealingLR: class input value 1e-06 and checkpointvalue 1e-05 for minimum learning rate"
    report = triage_lines(tmp_path, line + " do not match")
    assert (report.diagnosis.failure_class, cited(report)) == (CONFIG, "config.scheduler_checkpoint_mismatch")
