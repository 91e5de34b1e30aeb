"""Environment message families in the signatures, read whole through triage (knowledge/signatures/environment.yaml):
the software stack that does not fit the machine or the code, in the words of the programs that print it.

Every line is one a real program prints: a thread where it was seen, or the source file that prints it.
"""

from __future__ import annotations

from pathlib import Path

from triage_lines import cited, triage_lines

from crashcart.knowledge.taxonomy import FailureClass

ENV = FailureClass.ENVIRONMENT


def test_a_toolkit_that_is_not_torchs_cuda_fails_the_extension_build(tmp_path: Path) -> None:
    # deepspeedai/DeepSpeed:op_builder/builder.py, assert_no_cuda_mismatch raising CUDAMismatchException
    deepspeed = triage_lines(
        tmp_path,
        "deepspeed.ops.op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: Installed CUDA version 12.1"
        " does not match the version torch was compiled with 11.8, unable to compile cuda/cpp extensions without a"
        " matching cuda version.",
    )
    assert (deepspeed.diagnosis.failure_class, cited(deepspeed)) == (ENV, "env.cuda_version_mismatch")
    # NVIDIA/apex:setup.py, check_cuda_torch_binary_vs_bare_metal
    apex = triage_lines(
        tmp_path,
        "RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the version used"
        " to compile Pytorch binaries.  Pytorch binaries were compiled with Cuda 11.8.",
    )
    assert (apex.diagnosis.failure_class, cited(apex)) == (ENV, "env.cuda_version_mismatch")


def test_a_minor_toolkit_mismatch_deepspeed_accepts_is_no_failure(tmp_path: Path) -> None:
    # deepspeedai/DeepSpeed:op_builder/builder.py: the same check's print when the APIs are compatible
    report = triage_lines(
        tmp_path,
        "Installed CUDA version 12.1 does not match the version torch was compiled with 12.4 but since the APIs are"
        " compatible, accepting this combination",
    )
    assert report.diagnosis.failure_class is not ENV


def test_a_missing_toolchain_for_a_jit_extension_is_the_environment(tmp_path: Path) -> None:
    for line in (
        # deepspeedai/DeepSpeed:op_builder/builder.py, installed_cuda_version
        "deepspeed.ops.op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to compile CUDA op(s)",
        # pytorch/pytorch:torch/utils/cpp_extension.py, verify_ninja_availability
        "RuntimeError: Ninja is required to load C++ extensions",
        # deepspeedai/DeepSpeed:op_builder/builder.py, its re-raise of torch's ninja check
        "RuntimeError: Unable to JIT load the fused_adam op due to ninja not being installed.",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.cuda_toolkit_missing"), line


def test_the_cuda_runtimes_driver_misfits_are_the_driver_libraries(tmp_path: Path) -> None:
    # torch's cudaGetDeviceCount wording (PKU-YuanGroup/Video-LLaVA#22) around libcudart's text for error 803
    report = triage_lines(
        tmp_path,
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling"
        " NumCudaDevices() that might have already set an error? Error 803: system has unsupported display driver /"
        " cuda driver combination",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.nvml_mismatch")


def test_an_optional_package_a_transformers_class_needs_is_missing(tmp_path: Path) -> None:
    # huggingface/transformers:src/transformers/utils/import_utils.py: the ImportError's message starts on the next
    # line, so the exception line alone would be python.import_error's project import
    report = triage_lines(
        tmp_path,
        "ImportError: ",
        "LlamaTokenizer requires the SentencePiece library but it was not found in your environment. Check out the"
        " instructions on the",
        "installation page of its repo: https://github.com/google/sentencepiece#installation and follow the ones",
        "that match your environment. Please note that you may need to restart your runtime after installation.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.missing_accelerator_package")


def test_a_name_numpy_removed_is_a_numpy_version_not_a_bug(tmp_path: Path) -> None:
    # numpy/numpy:numpy/__init__.py, __former_attrs__'s message for np.float (removed in 1.24)
    report = triage_lines(
        tmp_path,
        "AttributeError: module 'numpy' has no attribute 'float'.",
        "`np.float` was a deprecated alias for the builtin `float`. To avoid this error in existing code, use `float`"
        " by itself. Doing this will not modify any behavior and is safe. If you specifically wanted the numpy scalar"
        " type, use `np.float64` here.",
        "The aliases was originally deprecated in NumPy 1.20; for more details and guidance see the original release"
        " note at:",
        "    https://numpy.org/devdocs/release/1.20.0-notes.html#deprecations",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.numpy_abi")
    # numpy/numpy:numpy/__init__.py, __expired_attributes__ (NumPy 2.0)
    removed = triage_lines(
        tmp_path, "AttributeError: `np.float_` was removed in the NumPy 2.0 release. Use `np.float64` instead."
    )
    assert (removed.diagnosis.failure_class, cited(removed)) == (ENV, "env.numpy_abi")


def test_jax_refusing_its_jaxlib_is_a_version_conflict(tmp_path: Path) -> None:
    # jax-ml/jax:jax/_src/lib/__init__.py, check_jaxlib_version at import
    report = triage_lines(
        tmp_path,
        "RuntimeError: jaxlib version 0.4.30 is newer than and incompatible with jax version 0.4.26. Please update your"
        " jax and/or jaxlib packages.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.version_conflict")


def test_a_frameworks_trainer_config_lacking_an_attribute_is_drift_a_projects_own_class_a_bug(tmp_path: Path) -> None:
    # dhcode-cpp/X-R1#72: trl's GRPOConfig of an older trl than the code
    drift = triage_lines(
        tmp_path,
        "[rank0]: AttributeError: 'GRPOConfig' object has no attribute 'num_iterations'. Did you mean:"
        " 'num_generations'?",
    )
    assert (drift.diagnosis.failure_class, cited(drift)) == (ENV, "env.framework_api_drift")
    # cychai1995/DDPGfD#3: the project's own RLTrainer reads self.device before it sets it
    own = triage_lines(
        tmp_path,
        "Traceback (most recent call last):",
        '  File "train.py", line 510, in <module>',
        "    main()",
        '  File "train.py", line 430, in main',
        "    trainer = RLTrainer(conf_path, args.eval)",
        '  File "train.py", line 83, in __init__',
        "    self.agent = DDPGfDAgent(self.full_conf.agent_config, self.device)",
        "AttributeError: 'RLTrainer' object has no attribute 'device'",
    )
    assert own.diagnosis.failure_class is FailureClass.CODE_BUG


def test_a_model_type_transformers_does_not_know_is_a_release_older_than_the_checkpoint(tmp_path: Path) -> None:
    # huggingface/transformers:src/transformers/models/auto/configuration_auto.py, AutoConfig.from_pretrained
    report = triage_lines(
        tmp_path,
        "ValueError: The checkpoint you are trying to load has model type `qwen2` but Transformers does not recognize"
        " this architecture. This could be because of an issue with the checkpoint, or because your version of"
        " Transformers is out of date.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.version_conflict")


def test_torchs_extension_builder_refusing_the_toolchain_is_the_environment(tmp_path: Path) -> None:
    # pytorch/pytorch:torch/utils/cpp_extension.py: the source's format strings with values filled in
    for line, rule in (
        (
            "OSError: ROCM_HOME environment variable is not set. Please set it to your ROCm install root.",
            "env.cuda_toolkit_missing",
        ),
        (
            "RuntimeError: CUDA was not found on the system, please set the CUDA_HOME or the CUDA_PATHenvironment"
            " variable or add NVCC to your system PATH. The extension compilation will fail.",
            "env.cuda_toolkit_missing",
        ),
        (
            "RuntimeError: The current installed version of g++ (13.2.0) is greater than the maximum required version"
            " by CUDA 11.8. Please make sure to use an adequate version of g++ (>=6.0.0, <12.0).",
            "env.host_compiler_version",
        ),
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, rule), line


def test_a_launcher_asked_for_gpus_on_a_host_without_them_is_the_environment(tmp_path: Path) -> None:
    for line in (
        "ValueError: Cuda is not available.",  # pytorch/pytorch:torch/distributed/run.py, --nproc-per-node=gpu
        # Lightning-AI/pytorch-lightning:src/lightning/fabric/accelerators/cuda.py, find_usable_cuda_devices
        "ValueError: You requested to find 2 devices but there are no visible CUDA devices on this machine.",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.no_driver_or_gpu"), line


def test_bitsandbytes_without_its_native_library_fails_on_the_first_native_call(tmp_path: Path) -> None:
    # bitsandbytes-foundation/bitsandbytes:bitsandbytes/cextension.py: the stand-in library's RuntimeError, whose
    # message starts on the next line (the source's format)
    report = triage_lines(
        tmp_path,
        "RuntimeError: ",
        "🚨 CUDA SETUP ERROR: Missing dependency: libcudart.so.12 🚨",
        "",
        "CUDA 12.x runtime libraries were not found in the LD_LIBRARY_PATH.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.bitsandbytes_native_library")


def test_bitsandbytes_falling_back_to_a_shipped_binary_is_no_failure(tmp_path: Path) -> None:
    # bitsandbytes-foundation/bitsandbytes:bitsandbytes/cextension.py: the warning when it loads a nearby CUDA build
    report = triage_lines(
        tmp_path, "No prebuilt binary for CUDA 12.9, loading CUDA 12.8 instead. Set BNB_CUDA_VERSION to override."
    )
    assert report.diagnosis.failure_class is not ENV


def test_the_megatron_stack_missing_or_too_old_is_the_environment(tmp_path: Path) -> None:
    for line, rule in (
        # NVIDIA/NeMo:nemo/core/optim/optimizer_with_main_params.py (the source's format)
        (
            "ImportError: megatron-core was not found. Please see the NeMo README for installation instructions:"
            " https://github.com/NVIDIA/NeMo#megatron-gpt.",
            "env.missing_accelerator_package",
        ),
        # NVIDIA/Megatron-LM:megatron/core/extensions/transformer_engine.py, two literals joined with no space
        (
            "AssertionError: Transformer-Engine v1.1.0 must be >= 1.2.0 to supportsliding window attention.",
            "env.version_conflict",
        ),
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, rule), line


def test_triton_without_a_host_compiler_is_the_toolchain(tmp_path: Path) -> None:
    # triton-lang/triton:python/triton/runtime/build.py, the compiler lookup for a kernel's launcher
    report = triage_lines(
        tmp_path,
        "RuntimeError: Failed to find C compiler. Please specify via CC environment variable or set"
        " triton.knobs.build.impl.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.cuda_toolkit_missing")


def test_xformers_built_without_cuda_fails_its_dispatch_as_the_environment(tmp_path: Path) -> None:
    # facebookresearch/xformers:xformers/ops/fmha/dispatch.py raises the operator list; the reason is
    # xformers/ops/fmha/common.py's, in the sources' format (the query line is dispatch.py's _format_inputs_description)
    report = triage_lines(
        tmp_path,
        "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:",
        "     query       : shape=(1, 4096, 8, 40) (torch.float16)",
        "`cutlassF` is not supported because:",
        "    xFormers wasn't build with CUDA support",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.xformers_without_cuda")


def test_a_torch_build_without_this_gpus_kernels_or_without_cuda_is_the_environment(tmp_path: Path) -> None:
    # pytorch/pytorch:torch/cuda/__init__.py, the source's format: torch 2.14's warning for a GPU the build has no
    # kernels for, and a CPU-only build asked for a device
    for line, rule in (
        (
            "Your installed torch==2.14.1+cu126 does not include kernels for this GPU. Reinstall the same version"
            " against a CUDA build that does, e.g.:",
            "env.arch_not_supported",
        ),
        ("RuntimeError: PyTorch was compiled without CUDA support", "env.no_driver_or_gpu"),
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, rule), line


def test_ranks_bringing_different_nccl_stacks_are_the_environment(tmp_path: Path) -> None:
    # NVIDIA/nccl:src/init.cc, read with strings from libnccl.so 2.32.3: the message after NCCL's WARN prefix
    for line in (
        "Mismatched NCCL version detected : rank 0 version 22703 rank 8 version 21805",
        "Detected mixed local Net device counts across ranks (min 4, max 8). Set NCCL_IGNORE_NET_MISMATCH=1 to"
        " continue.",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.nccl_ranks_mismatch"), line
    ignored = triage_lines(
        tmp_path,
        "Detected mixed local Net device counts across ranks (min 4, max 8). Ignoring due to NCCL_IGNORE_NET_MISMATCH.",
    )
    assert ignored.diagnosis.failure_class is not ENV


def test_a_package_a_transformers_quantizer_needs_is_missing_not_a_bug(tmp_path: Path) -> None:
    # huggingface/transformers:src/transformers/quantizers/quantizer_bnb_4bit.py and quantizer_awq.py (the sources'
    # format): ImportErrors python.import_error would read as the project's own import
    for line in (
        "ImportError: Using `bitsandbytes` 4-bit quantization requires bitsandbytes:"
        " `pip install -U bitsandbytes>=0.46.1`",
        "ImportError: Loading an AWQ quantized model requires accelerate (`pip install accelerate`)",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.missing_accelerator_package"), line


def test_an_extension_build_failure_is_the_toolchain_unless_the_compiler_says_more(tmp_path: Path) -> None:
    # pytorch/pytorch:torch/utils/cpp_extension.py: _run_ninja_build's prefix, alone and with nvcc's error in the output
    # printed beside it (verbose builds stream ninja's output)
    alone = triage_lines(tmp_path, "RuntimeError: Error compiling objects for extension")
    assert (alone.diagnosis.failure_class, cited(alone)) == (ENV, "env.extension_build_failed")
    explained = triage_lines(
        tmp_path,
        "RuntimeError: Error building extension 'fused_adam'",
        "nvcc fatal   : Unsupported gpu architecture 'compute_90'",  # jax-ml/jax#16640, nvcc's own line
    )
    assert cited(explained) == "env.arch_not_supported"


def test_lightning_asked_for_a_gpu_on_a_host_without_one_is_the_environment_not_the_settings(tmp_path: Path) -> None:
    # Lightning-AI/pytorch-lightning:src/lightning/pytorch/trainer/connectors/accelerator_connector.py (the source's
    # format): a MisconfigurationException config.lightning_misconfiguration also reads, where the host is the cause
    report = triage_lines(
        tmp_path,
        "lightning.fabric.utilities.exceptions.MisconfigurationException: `CUDAAccelerator` can not run on your system"
        " since the accelerator is not available. The following accelerator(s) is available and can be passed into"
        " `accelerator` argument of `Trainer`: ['cpu'].",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.no_driver_or_gpu")


def test_a_trainer_attribute_of_another_release_is_the_framework_version(tmp_path: Path) -> None:
    for line in (
        # SeungoneKim/SICK_Summarization#4: a transformers Trainer subclass reading what newer transformers dropped
        "AttributeError: 'DualDecoderTrainer' object has no attribute 'do_grad_scaling'",
        # HKU-MedAI/MGCA#10: Lightning's Trainer before 1.6; the maintainer's fix was upgrading pytorch_lightning
        "AttributeError: 'Trainer' object has no attribute 'num_devices'",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.trainer_attribute_drift"), line


def test_an_attribute_a_projects_own_trainer_never_set_is_still_its_bug(tmp_path: Path) -> None:
    # cychai1995/DDPGfD#3: the project's RLTrainer read self.device before setting it
    report = triage_lines(tmp_path, "AttributeError: 'RLTrainer' object has no attribute 'device'")
    assert report.diagnosis.failure_class is FailureClass.CODE_BUG


def test_an_api_lightning_removed_is_the_lightning_version(tmp_path: Path) -> None:
    # official-stockfish/nnue-pytorch#213: the graveyard's AttributeError, hard-wrapped as the PR quotes it
    report = triage_lines(
        tmp_path,
        "AttributeError: `Trainer.root_gpu` was deprecated in v1.6 and is no longer",
        "accessible as of v1.8. Please use `Trainer.strategy.root_device.index` instead.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.lightning_removed_api")


def test_a_framework_called_with_another_releases_signature_is_the_version(tmp_path: Path) -> None:
    for line in (
        # huggingface/course#987: evaluation_strategy, renamed eval_strategy
        "TypeError: TrainingArguments.__init__() got an unexpected keyword argument 'evaluation_strategy'",
        # NVIDIA/workbench-example-llama3-finetune#1: an argument trl 0.13 moved into SFTConfig
        "TypeError: SFTTrainer.__init__() got an unexpected keyword argument 'dataset_text_field'",
        # zai-org/GLM-4#620: a Seq2SeqTrainer override of training_step under transformers 4.46
        "TypeError: Seq2SeqTrainer.training_step() takes 3 positional arguments but 4 were given",
        # INCHEON-CHO/Dynamic_Model_Pruning_with_Feedback#3: torch's private Conv2d._conv_forward gained bias in 1.8
        " Conv2d._conv_forward() missing 1 required positional argument: 'bias'",
        # 2noise/ChatTTS#28: a model forward without the cache_position transformers 4.38+ passes
        "TypeError: LlamaModel.forward() got an unexpected keyword argument 'cache_position'",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.framework_signature_drift"), line
    # Algorineko/AgenticArXiv-RL#11: both renamed trl arguments, the first message hard-wrapped before its name
    report = triage_lines(
        tmp_path,
        "SFTConfig(max_seq_length=1024)",
        "TypeError: SFTConfig.__init__() got an unexpected keyword argument",
        "'max_seq_length'. Did you mean 'max_length'?",
        "SFTTrainer(..., tokenizer=tokenizer)",
        "TypeError: SFTTrainer.__init__() got an unexpected keyword argument 'tokenizer'",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.framework_signature_drift")


def test_an_extension_built_for_numpy_1_under_numpy_2_is_the_numpy_version(tmp_path: Path) -> None:
    # ONSdigital/csvcubed#913: builds with numpy 1.26.4, fails with numpy 2.0
    report = triage_lines(
        tmp_path,
        "ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, got 88"
        " from PyObject",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.numpy_abi")


def test_a_cache_method_transformers_removed_is_the_transformers_version(tmp_path: Path) -> None:
    # NVlabs/hymba#11: get_max_length, removed in transformers 4.48, called by the model's remote code
    report = triage_lines(
        tmp_path, "AttributeError: 'HybridMambaAttentionDynamicCache' object has no attribute 'get_max_length'"
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.cache_api_drift")


def test_torchvision_ops_that_do_not_load_are_the_torchvision_build(tmp_path: Path) -> None:
    # concept-graphs/concept-graphs#79: torchvision/extension.py's _assert_has_ops, frame and message as printed
    report = triage_lines(
        tmp_path,
        ' File "/home/dji/anaconda3/envs/conceptgraph/lib/python3.10/site-packages/torchvision/extension.py", line 48,'
        " in _assert_has_ops",
        "    raise RuntimeError(",
        "RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision versions are"
        " incompatible, or if you had errors while compiling torchvision from source. For further information on the"
        " compatible versions, check https://github.com/pytorch/vision#installation for the compatibility matrix."
        " Please check your PyTorch version with torch.__version__ and your torchvision version with"
        " torchvision.__version__ and verify if they are compatible, and if not please reinstall torchvision so that"
        " it matches your PyTorch install.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.torchvision_ops_unloadable")


def test_transformers_lazy_import_names_the_stack_and_its_wrapped_reason_decides(tmp_path: Path) -> None:
    # huggingface/transformers#28275: the wrapped reason, on a line of its own, is the extension's undefined symbol
    report = triage_lines(
        tmp_path,
        "RuntimeError: Failed to import transformers.modeling_utils because of the following error (look up to see its"
        " traceback):",
        "Failed to import transformers.generation.utils because of the following error (look up to see its traceback):",
        "/usr/local/lib/python3.8/dist-packages/transformer_engine_extensions.cpython-38-x86_64-linux-gnu.so: undefined"
        " symbol: _ZN3c106detail23torchInternalAssertFailEPKcS2_jS2_"
        "RKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.undefined_symbol")
    # huggingface/transformers#30194's title: a reason no rule knows, the wrapper alone still says the stack
    alone = triage_lines(
        tmp_path,
        "RuntimeError: Failed to import transformers.pipelines because of the following error (look up to see its"
        " traceback): name 'LRScheduler' is not defined",
    )
    assert (alone.diagnosis.failure_class, cited(alone)) == (ENV, "env.transformers_lazy_import")


def test_a_name_an_installed_library_lacks_is_its_version(tmp_path: Path) -> None:
    # ultralytics/yolov3#67's title: torch.argsort under pytorch 0.4.1; the maintainer: upgrade to 1.0
    report = triage_lines(tmp_path, "module 'torch' has no attribute 'argsort'")
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.library_module_attribute")


def test_numpy_2_under_an_extension_built_for_numpy_1_is_the_numpy_version(tmp_path: Path) -> None:
    # nv-tlabs/vipe#42: tensorflow's extension under NumPy 2.1.2, the AttributeError before NumPy's own explanation
    report = triage_lines(
        tmp_path,
        "    from tensorflow.python.client._pywrap_tf_session import *",
        "AttributeError: _ARRAY_API not found",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.numpy_abi")


def test_a_cudnn_other_than_torchs_is_the_environment(tmp_path: Path) -> None:
    for line in (
        # pytorch/functorch#926: an older cuDNN on LD_LIBRARY_PATH under the PyTorch 1.12 cu113 binaries
        "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but linked against"
        " (8, 0, 3)",
        # VisionLearningGroup/DA_Detection#19: torch 1.x's older wording
        "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7600",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.cudnn_version_mismatch"), line


def test_a_torchvision_op_without_its_cuda_kernel_is_the_torchvision_build(tmp_path: Path) -> None:
    # nicofdga/DZ-FaceDetailer#21: the dispatcher's NotImplementedError, which python.yaml alone reads as a bug
    report = triage_lines(
        tmp_path,
        "NotImplementedError: Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. This could be"
        " because the operator doesn't exist for this backend, or was omitted during the selective/custom build"
        " process (if using custom build).",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.torchvision_ops_unloadable")


def test_an_extension_that_cannot_import_numpys_core_is_the_numpy_version(tmp_path: Path) -> None:
    # opencv/opencv#8139: cv2 under another NumPy than it was built against, as the log prints it
    report = triage_lines(
        tmp_path,
        "ImportError: numpy.core.multiarray failed to import",
        "Traceback (most recent call last):",
        '  File "x.py", line 3, in <module>',
        "    import cv2",
        "ImportError: numpy.core.multiarray failed to import",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.numpy_abi")


def test_a_name_python_removed_is_the_python_version(tmp_path: Path) -> None:
    # johnson-c/ColRadPy#7: collections.Mapping under Python 3.10, after the bare "AttributeError: " line the log
    # starts with (which alone is python.attribute_error's)
    report = triage_lines(
        tmp_path,
        "AttributeError: ",
        '  File "C:\\Users\\dsgah\\github\\ColRadPy\\colradpy\\colradpy_class.py", line 305, in update_dict',
        "    if isinstance(v, collections.Mapping):",
        "AttributeError: module 'collections' has no attribute 'Mapping'",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.python_stdlib_removed")


def test_transformers_checks_of_what_a_models_code_needs_are_the_environment(tmp_path: Path) -> None:
    for line in (
        # huggingface/transformers:src/transformers/dynamic_module_utils.py, check_imports (the source's format)
        "ImportError: This modeling file requires the following packages that were not found in your environment:"
        " einops. Run `pip install einops`",
        # huggingface/transformers:src/transformers/modeling_utils.py, the flash-attention check (the source's format)
        "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: the"
        " package flash_attn seems to be not installed. Please refer to the documentation of"
        " https://huggingface.co/docs/transformers/perf_infer_gpu_one#flashattention-2 to install Flash Attention 2.",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.transformers_requires_package"), line


def test_a_third_party_package_that_is_not_installed_is_the_environment(tmp_path: Path) -> None:
    for line in (
        # wolph/portalocker#86: pytest's report under Python 3.12, which no longer ships distutils
        "E       ModuleNotFoundError: No module named 'distutils'",
        # NVIDIA/TransformerEngine#1878: TE's own module imports einops, which its wheel does not declare
        "ModuleNotFoundError: No module named 'einops'",
        # ultralytics/ultralytics#13155: a torchvision module newer torchvision removed
        "No module named 'torchvision.models.utils'",
    ):
        report = triage_lines(tmp_path, line)
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.missing_python_package"), line


def test_code_indexing_the_cache_as_tuples_is_the_transformers_version(tmp_path: Path) -> None:
    # peijunallin/alphalora#4: the project's copy of Mistral's modeling under a newer transformers; works with 4.41
    report = triage_lines(
        tmp_path,
        '  File "/nas02/Hadi/Model-Selection-IF/alphalora/src/mola_modeling_mistral_hacked.py", line 1637, in'
        " prepare_inputs_for_generation",
        "    cache_length = past_length = past_key_values[0][0].shape[2]",
        '  File "/home/haskari/miniconda3/envs/alphalora/lib/python3.10/site-packages/transformers/cache_utils.py",'
        " line 314, in __getitem__",
        '    raise KeyError(f"Cache only has {len(self)} layers, attempted to access layer with index {layer_idx}")',
        "KeyError: 'Cache only has 0 layers, attempted to access layer with index 0'",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.cache_api_drift")


def test_bitsandbytes_whose_cuda_setup_fails_at_import_is_the_environment(tmp_path: Path) -> None:
    # NVlabs/RVT#76: bitsandbytes' cextension.py raising at import, the message on the lines after 'RuntimeError: '
    report = triage_lines(
        tmp_path,
        '  File "/home/s/anaconda3/envs/rvt/lib/python3.8/site-packages/bitsandbytes/cextension.py", line 20, in'
        " <module>",
        "    raise RuntimeError('''",
        "RuntimeError: ",
        "        CUDA Setup failed despite GPU being available. Please run the following command to get more"
        " information:",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.bitsandbytes_native_library")


def test_cudnn_that_cannot_load_its_libraries_is_the_environment(tmp_path: Path) -> None:
    # sjtuplayer/anomalydiffusion#76: cuDNN's own loader, then the abort
    report = triage_lines(
        tmp_path,
        "Epoch: 0",
        "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such"
        " file or directory",
        "Please make sure libcudnn_cnn_infer.so.8 is in your library path!",
        "Aborted",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.cudnn_library_unloadable")


def test_flash_attention_on_a_gpu_it_does_not_support_is_the_environment(tmp_path: Path) -> None:
    # Dao-AILab/flash-attention#143: its backward on a T4
    report = triage_lines(
        tmp_path,
        '.venv/lib/python3.10/site-packages/flash_attn/flash_attn_interface.py", line 42, in _flash_attn_backward',
        "    _, _, _, softmax_d = flash_attn_cuda.bwd(",
        "RuntimeError: Expected is_sm80 to be true, but got false.  (Could this error message be improved?  If so,"
        " please report an enhancement request to PyTorch.)",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.arch_not_supported")


def test_python_3_10_syntax_under_an_older_python_is_the_python_version(tmp_path: Path) -> None:
    # hayden-cn/ComfyUI-Model-Manager#164: a 'str | None' default in a def, evaluated at import under Python 3.9
    report = triage_lines(
        tmp_path,
        '...\\ComfyUI\\custom_nodes\\ComfyUI-Model-Manager\\py\\utils.py", line 311, in <module>',
        "    def save_model_preview_image(model_path: str, image_file_or_url: Any, platform: str | None = None):",
        "TypeError: unsupported operand type(s) for |: 'type' and 'NoneType'",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.python_too_old_for_syntax")


def test_tensorflows_cudnn_older_than_its_build_is_the_environment(tmp_path: Path) -> None:
    # tensorflow/tensorflow#37606: TensorFlow 1.15 on a Jetson, the E line of its stream executor
    report = triage_lines(
        tmp_path,
        "2020-07-02 18:49:12.161725: I tensorflow/stream_executor/platform/default/dso_loader.cc:44] Successfully"
        " opened dynamic library libcudnn.so.7",
        "2020-07-02 18:49:18.254447: E tensorflow/stream_executor/cuda/cuda_dnn.cc:320] Loaded runtime CuDNN library:"
        " 7.5.0 but source was compiled with: 7.6.3.  CuDNN library major and minor version needs to match or have"
        " higher minor version in case of CuDNN 7.0 or later version. If using a binary install, upgrade your CuDNN"
        " library.  If building from sources, make sure the library loaded at runtime is compatible with the version"
        " specified during compile configuration.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.cudnn_version_mismatch")


def test_a_host_gcc_nvcc_refuses_is_the_toolchain(tmp_path: Path) -> None:
    # ceccocats/tkDNN#134: nvcc's crt/host_config.h, then CMake's failure
    report = triage_lines(
        tmp_path,
        "/usr/local/cuda/include/crt/host_config.h:138:2: error: #error -- unsupported GNU version! gcc versions later"
        " than 8 are not supported!",
        "  138 | #error -- unsupported GNU version! gcc versions later than 8 are not supported!",
        "      |  ^~~~~",
        "CMake Error at kernels_generated_upsample.cu.o.cmake:220 (message):",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.host_compiler_version")


def test_docker_without_the_nvidia_runtime_is_the_environment(tmp_path: Path) -> None:
    # hiyouga/LlamaFactory#5268: docker run --gpus on a host whose daemon cannot select a GPU driver
    report = triage_lines(
        tmp_path, 'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]]'
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.no_driver_or_gpu")


def test_a_distribution_pkg_resources_cannot_find_is_the_environment(tmp_path: Path) -> None:
    # pimutils/khal#88: the console script's requirement is not installed
    report = triage_lines(
        tmp_path,
        '  File "/usr/lib/python2.7/site-packages/pkg_resources.py", line 639, in resolve',
        "    raise DistributionNotFound(req)",
        "pkg_resources.DistributionNotFound: click",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.missing_python_package")


def test_an_8bit_load_without_its_packages_is_the_environment(tmp_path: Path) -> None:
    # zjunlp/DeepKE#628: from_pretrained's ImportError, as raised in transformers' modeling_utils.py
    report = triage_lines(
        tmp_path,
        '  File "D:\\app\\Anaconda\\envs\\deepke-llm\\lib\\site-packages\\transformers\\modeling_utils.py", line 2482,'
        " in from_pretrained",
        "    raise ImportError(",
        "ImportError: Using `load_in_8bit=True` requires Accelerate: `pip install accelerate` and the late",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.missing_accelerator_package")


def test_triton_without_the_drivers_libcuda_so_is_the_environment(tmp_path: Path) -> None:
    # unslothai/unsloth#679: Triton 2.x's libcuda_dirs, then its hint
    report = triage_lines(
        tmp_path,
        "AssertionError: libcuda.so cannot found!",
        "Possible files are located at ['/lib/x86_64-linux-gnu/libcuda.so.1'].Please create a symlink of libcuda.so to"
        " any of the file.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.cuda_toolkit_missing")


def test_a_gpu_checkpoint_loaded_where_torch_sees_no_gpu_is_the_environment(tmp_path: Path) -> None:
    # kleinlee/DH_live#22: the maintainer: the CPU build of pytorch is installed
    report = triage_lines(
        tmp_path,
        "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If"
        " you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map"
        " your storages to the CPU.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.no_driver_or_gpu")


def test_bitsandbytes_native_calls_on_its_missing_library_are_the_environment(tmp_path: Path) -> None:
    # ovh/ai-training-examples#102's title: bitsandbytes went on without its CUDA library, lib None
    report = triage_lines(tmp_path, "AttributeError: 'NoneType' object has no attribute 'cquantize_blockwise_fp16_nf4'")
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.bitsandbytes_native_library")


def test_jax_falling_back_to_the_cpu_for_its_cudnn_is_the_environment(tmp_path: Path) -> None:
    # MIT-REALM/gcbfplus#1: a jaxlib built against cuDNN 8.9 finds 8.6 installed
    older = triage_lines(
        tmp_path,
        "CUDA backend failed to initialize: Found cuDNN version 8600, but JAX was built against version 8906, which is"
        " newer. The copy of cuDNN that is installed must be at least as new as the version against which JAX was"
        " built. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)",
    )
    assert (older.diagnosis.failure_class, cited(older)) == (ENV, "env.jax_cuda_backend_failed")
    # conda-forge/jax-feedstock#149: newer jaxlib lists the CUDA components it found wanting
    outdated = triage_lines(
        tmp_path,
        "CUDA backend failed to initialize: Unable to use CUDA because of the following issues with CUDA components:",
        "Outdated cuDNN installation found.",
        "Version JAX was built against: 8907",
        "Minimum supported: 9100",
        "Installed version: 8907",
    )
    assert (outdated.diagnosis.failure_class, cited(outdated)) == (ENV, "env.jax_cuda_backend_failed")


def test_missing_python_headers_fail_the_extension_build(tmp_path: Path) -> None:
    # deepspeedai/DeepSpeed#3223: torch's python_headers.h includes Python.h, absent without python3-dev
    report = triage_lines(
        tmp_path,
        "/home/ubuntuai/axolotl/.venv/lib/python3.10/site-packages/torch/include/torch/csrc/python_headers.h:12:10:"
        " fatal error: Python.h: No such file or directory 12 | #include <Python.h> |          ^~~~~~~~~~ compilation"
        " terminated.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.cuda_toolkit_missing")


def test_torchvisions_cuda_check_wrapped_over_lines_is_the_environment(tmp_path: Path) -> None:
    # geocine/sd-easy-mode#18: the torchvision check's message wrapped at the terminal's width
    report = triage_lines(
        tmp_path,
        "RuntimeError: Detected that PyTorch and torchvision were compiled with different",
        "CUDA versions. PyTorch has CUDA Version=11.7 and torchvision has CUDA ",
        "Version=11.8. Please reinstall the torchvision that matches your PyTorch ",
        "install.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.cuda_version_mismatch")


def test_a_name_gone_from_a_third_party_package_without_its_path_is_the_environment(tmp_path: Path) -> None:
    # helpshift/pypiprivate#15: markupsafe 2.1 removed soft_unicode, which the installed jinja2 imports
    report = triage_lines(
        tmp_path,
        "from markupsafe import Markup, escape, soft_unicode",
        "ImportError: cannot import name 'soft_unicode' from 'markupsafe'",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.import_from_installed_package")


def test_a_kernel_compiled_for_another_architecture_is_the_environment(tmp_path: Path) -> None:
    # luost26/diffusion-point-cloud#8: the project's CUDA extension has no kernel for the RTX 2080
    report = triage_lines(
        tmp_path,
        '  File "/userhome/point_cloud/diffusion-point-cloud-main/evaluation/evaluation_metrics.py", line 58, in'
        " EMD_CD",
        "    cd_lst.append(dl.mean(dim=1) + dr.mean(dim=1))",
        "RuntimeError: CUDA error: invalid device function",
        "Segmentation fault (core dumped)",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.no_kernel_image")


def test_cuda_driver_initialisation_failing_is_the_environment(tmp_path: Path) -> None:
    # Kai-46/ARF-svox2#9: torch's lazy CUDA init on a machine whose driver the process cannot use
    report = triage_lines(
        tmp_path,
        '  File "~/anaconda3/envs/arf-svox2/lib/python3.8/site-packages/torch/cuda/__init__.py", line 217, in'
        " _lazy_init",
        "    torch._C._cuda_init()",
        "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.no_driver_or_gpu")


def test_pythons_dll_load_failure_on_windows_is_the_environment(tmp_path: Path) -> None:
    # pytorch/pytorch#9344: import torch on Windows, a DLL of its _C extension not loadable
    report = triage_lines(
        tmp_path,
        '  File "C:\\Program Files (x86)\\Microsoft Visual Studio\\Shared\\Python36_64\\lib\\site-packages\\torch\\'
        '__init__.py", line 78, in <module>',
        "    from torch._C import *",
        "ImportError: DLL load failed: The specified module could not be found.",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.windows_dll_load")


def test_cudnn_that_cannot_initialise_is_the_environment_below_an_oom(tmp_path: Path) -> None:
    # xincoder/GRIP#23: cuDNN's handle does not initialise in a mismatched conda stack
    report = triage_lines(
        tmp_path,
        '  File "/home/xxx/anaconda3/envs/DRL/lib/python3.7/site-packages/torch/nn/modules/rnn.py", line 176, in'
        " flatten_parameters",
        "    self.batch_first, bool(self.bidirectional))  # type: ignore",
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
    )
    assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.cudnn_unusable")
    # beside a GPU OOM (bluer555/CR-GAN#8's line) the OOM decides
    oom = triage_lines(
        tmp_path,
        "RuntimeError: CUDA error:out of memory",
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
    )
    assert oom.diagnosis.failure_class is FailureClass.GPU_OOM


def test_a_second_openmp_runtime_in_the_process_is_the_environment(tmp_path: Path) -> None:
    # clue-ai/ChatYuan#28 and danaugrs/huskarl#18: macOS, Intel's libiomp5 and LLVM's libomp both loaded
    hint = "OMP: Hint This means that multiple copies of the OpenMP runtime have been linked into the program."
    assert triage_lines(tmp_path, hint).diagnosis.failure_class is not ENV
    for line in (
        "OMP: Error #15: Initializing libiomp5.dylib, but found libomp.dylib already initialized.",
        "OMP: Error #15: Initializing libomp.dylib, but found libiomp5.dylib already initialized.",
    ):
        report = triage_lines(tmp_path, line, hint, "Abort trap: 6")
        assert (report.diagnosis.failure_class, cited(report)) == (ENV, "env.openmp_duplicate_runtime")
