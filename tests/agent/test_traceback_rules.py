"""Each judgement of a traceback, on a real traceback: the text as the thread shows it, beside the verdict.

Records are made from the text by tests/support/traceback_records.py, and, where the text holds a whole
traceback from its header on, by the parser itself (read_structure) for the same verdict end to end.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from traceback_records import traceback_from
from triage_lines import triage_lines

from crashcart.agent.traceback_rules import _FSTRING
from crashcart.agent.tracebacks import judge, role_of
from crashcart.knowledge.records import LineRef
from crashcart.knowledge.taxonomy import FailureClass, Role
from crashcart.parsers.models import Traceback
from crashcart.parsers.tracebacks import HEADER_PATTERNS, read_structure

ENV, CODE, DATA, CONFIG = (
    FailureClass.ENVIRONMENT,
    FailureClass.CODE_BUG,
    FailureClass.DATA_ERROR,
    FailureClass.CONFIG_ERROR,
)

# (source thread, traceback as printed, expected class, expected rule)
CASES = [
    (
        "FunctionLab/sei-framework#19",  # no cuDNN convolution algorithm's workspace fits: the GPU is out of memory
        """
Traceback (most recent call last):
  File "/home/user/.conda/envs/selene_sdk/lib/python3.7/site-packages/selene_sdk/train_model.py", line 453, in train
    loss.backward()
  File "/home/user/.conda/envs/selene_sdk/lib/python3.7/site-packages/torch/autograd/__init__.py", line 100, in backward
    allow_unreachable=True)  # allow_unreachable flag
RuntimeError: Unable to find a valid cuDNN algorithm to run convolution (try_all at /opt/conda/conda-bld/pytorch_1591914855613/work/aten/src/ATen/native/cudnn/Conv.cpp:693)
""",  # noqa: E501
        FailureClass.GPU_OOM,
        "traceback.gpu_oom",
    ),
    (
        "lzccccc/SMOKE#21",  # a DataLoader worker's descriptor dropped at the open-files limit
        """
Traceback (most recent call last):
  File "/home/robot1/anaconda3/envs/SMOKE/lib/python3.7/site-packages/torch/multiprocessing/reductions.py", line 294, in rebuild_storage_fd
    fd = df.detach()
  File "/home/robot1/anaconda3/envs/SMOKE/lib/python3.7/multiprocessing/reduction.py", line 161, in recvfds
    len(ancdata))
RuntimeError: received 0 items of ancdata
""",  # noqa: E501
        ENV,
        "traceback.open_files_limit",
    ),
    (
        "securefederatedai/openfederatedlearning#999",  # torch 2.2 built against NumPy 1.x, with NumPy 2 installed
        """
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
RuntimeError: Numpy is not available
""",
        ENV,
        "traceback.build_missing",
    ),
    # -- environment: modules, builds, versions ------------------------------------------------------------
    (
        "facebookresearch/xformers#826",
        """
Traceback (most recent call last):
  File "/opt/venv/lib/python3.10/site-packages/xformers/ops/fmha/triton.py", line 17, in <module>
    from flash_attn.flash_attn_triton import (
ModuleNotFoundError: No module named 'flash_attn'
""",
        ENV,
        "traceback.missing_module",
    ),
    (
        "aeye-lab/etra-reading-comprehension#15",  # the repository lacked its own utils package
        """
Traceback (most recent call last):
  File "/local/home/work/izaskr/etra-reading-comprehension/nn/model.py", line 28, in <module>
    from utils import feature_extraction as feature_extraction
ModuleNotFoundError: No module named 'utils'
""",
        CODE,
        "traceback.project_module",
    ),
    (
        "huggingface/transformers#4137",  # TensorFlow was not installed
        """
Traceback (most recent call last):
  File "/Users/danielk/ideaProjects/farsi-language-models/src/try_bert_lm.py", line 3, in <module>
    from transformers import TFBertForMaskedLM
ImportError: cannot import name 'TFBertForMaskedLM' from 'transformers' (/usr/local/lib/python3.7/site-packages/transformers/__init__.py)
""",  # noqa: E501
        ENV,
        "traceback.import_from_installed",
    ),
    (
        "mst272/LLM-Dojo#35",
        """
Traceback (most recent call last):
  File "/media/data/xgp/repo/LLM-Dojo/rlhf/./train_gkd.py", line 4, in <module>
    from trl import (
  File "<frozen importlib._bootstrap>", line 1075, in _handle_fromlist
  File "/usr/local/lib/python3.10/dist-packages/trl/import_utils.py", line 122, in __getattr__
    value = getattr(module, name)
  File "/usr/local/lib/python3.10/dist-packages/trl/import_utils.py", line 121, in __getattr__
    module = self._get_module(self._class_to_module[name])
  File "/usr/local/lib/python3.10/dist-packages/trl/import_utils.py", line 133, in _get_module
    raise RuntimeError(
RuntimeError: Failed to import trl.trainer.gkd_trainer because of the following error (look up to see its traceback):
Failed to import transformers.modeling_utils because of the following error (look up to see its traceback):
/usr/local/lib/python3.10/dist-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE
""",  # noqa: E501
        ENV,
        "traceback.undefined_symbol",
    ),
    (
        "archlinuxcn/repo#4836",  # transformers' dependency_versions_check, printed without its frames
        """
ImportError: tokenizers>=0.22.0,<=0.23.0 is required for a normal functioning of this module, but found tokenizers==0.23.1.
Try: `pip install transformers -U` or `pip install -e '.[dev]'` if you're working with git main
""",  # noqa: E501
        ENV,
        "traceback.version_check",
    ),
    (
        "bshall/hubert#1",  # a Windows torch wheel asked for the nccl backend
        r"""
Traceback (most recent call last):
  File "H:\CONDA\envs\stylegan3\lib\site-packages\torch\multiprocessing\spawn.py", line 69, in _wrap
    fn(i, *args)
  File "E:\VC\hubert\train.py", line 44, in train
    dist.init_process_group(
  File "H:\CONDA\envs\stylegan3\lib\site-packages\torch\distributed\distributed_c10d.py", line 602, in init_process_group
    default_pg = _new_process_group_helper(
  File "H:\CONDA\envs\stylegan3\lib\site-packages\torch\distributed\distributed_c10d.py", line 727, in _new_process_group_helper
    raise RuntimeError("Distributed package doesn't have NCCL " "built in")
RuntimeError: Distributed package doesn't have NCCL built in
""",  # noqa: E501
        ENV,
        "traceback.build_missing",
    ),
    (
        "NVIDIA/flownet2-pytorch#218",  # building the CUDA extension found no CUDA toolkit
        """
Traceback (most recent call last):
  File "setup.py", line 24, in <module>
    ], extra_compile_args={'cxx': cxx_args, 'nvcc': nvcc_args})
  File "/home/user/.local/lib/python3.7/site-packages/torch/utils/cpp_extension.py", line 498, in CUDAExtension
    library_dirs += library_paths(cuda=True)
  File "/home/user/.local/lib/python3.7/site-packages/torch/utils/cpp_extension.py", line 577, in library_paths
    if (not os.path.exists(_join_cuda_home(lib_dir)) and
  File "/home/user/.local/lib/python3.7/site-packages/torch/utils/cpp_extension.py", line 1252, in _join_cuda_home
    raise EnvironmentError('CUDA_HOME environment variable is not set. '
OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.
""",
        ENV,
        "traceback.build_missing",
    ),
    (
        "vm03/payload_dumper#38",  # protobuf 4 refuses a _pb2.py generated by an old protoc
        r"""
  File "C:\Users\****\Downloads\payload_dumper-master\payload_dumper.py", line 15, in <module>
    import update_metadata_pb2 as um
  File "C:\Users\****\Downloads\payload_dumper-master\update_metadata_pb2.py", line 33, in <module>
    _descriptor.EnumValueDescriptor(
  File "C:\Users\****\AppData\Local\Programs\Python\Python310\lib\site-packages\google\protobuf\descriptor.py", line 755, in __new__
    _message.Message._CheckCalledFromGeneratedFile()
TypeError: Descriptors cannot not be created directly.
If this call came from a _pb2.py file, your generated code is out of date and must be regenerated with protoc >= 3.19.0.
If you cannot immediately regenerate your protos, some other possible workarounds are:
 1. Downgrade the protobuf package to 3.20.x or lower.
 2. Set PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python (but this will use pure-Python parsing and will be much slower).
""",  # noqa: E501
        ENV,
        "traceback.version_check",
    ),
    (
        "zai-org/ChatGLM3#69",  # a DLL of the Windows torch wheel does not load
        r"""
Traceback (most recent call last):
  File "J:\ChatGLM3-main\web_demo.py", line 4, in <module>
    from utils import load_model_on_gpus
  File "J:\ChatGLM3-main\utils.py", line 4, in <module>
    from torch.nn import Module
  File "D:\python\lib\site-packages\torch\__init__.py", line 139, in <module>
    raise err
OSError: [WinError 126] 找不到指定的模块。 Error loading "D:\python\lib\site-packages\torch\lib\cudnn_cnn_infer64_8.dll" or one of its dependencies.
""",  # noqa: E501
        ENV,
        "traceback.undefined_symbol",
    ),
    (
        "yerfor/GeneFacePlusPlus#192",  # "fixed by update nvidia driver from 510 to 515"
        """
Traceback (most recent call last):
   File "/data/workspace/online-lipsync/online-genefacepp/debug2.py", line 14, in <module>
    data_ts = data_ts.cuda()
RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
""",
        ENV,
        "traceback.cuda_build_mismatch",
    ),
    (
        "JuergenFleiss/atrain_core#10",  # NumPy 2 removed an alias the package used; pinning numpy 1.26 worked
        """
AttributeError: `np.NaN` was removed in the NumPy 2.0 release. Use `np.nan` instead.. Did you mean: 'nan'?
""",
        ENV,
        "traceback.version_check",
    ),
    (
        "deepspeedai/DeepSpeed#3299",  # the JIT build of fused_adam: nvcc too old for compute_89 (its line above)
        """
Traceback (most recent call last):
  File "/home/ubuntu/anaconda3/envs/DeepSpeed/lib/python3.8/site-packages/torch/utils/cpp_extension.py", line 1893, in _run_ninja_build
    subprocess.run(
  File "/home/ubuntu/anaconda3/envs/DeepSpeed/lib/python3.8/subprocess.py", line 512, in run
    raise CalledProcessError(retcode, process.args,
subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.
""",  # noqa: E501
        ENV,
        "traceback.extension_build",
    ),
    (
        "ai4d-iasc/trixie#9",  # torch's own driver check, an AssertionError that mentions the GPU
        """
  File "/home/drozdyuka/anaconda3/envs/patchy_discs_model/lib/python3.7/site-packages/torch/cuda/__init__.py", line 63, in _check_driver
    of the CUDA driver.\"\"\".format(str(torch._C._cuda_getDriverVersion())))
AssertionError: 
The NVIDIA driver on your system is too old (found version 10010).
Please update your GPU driver by downloading and installing a new
version from the URL: http://www.nvidia.com/Download/index.aspx
""",  # noqa: E501, W291
        ENV,
        "traceback.version_check",
    ),
    # -- TypeError / AttributeError: a library's API, or the user's own bug -----------------------------------
    (
        "salesforce/CodeRL#61",  # the repository needs its own transformers fork
        r"""
Traceback (most recent call last):
  File "G:\CodeRL_A3\CodeRL\CodeRL\train.py", line 155, in <module>
    main(args)
  File "G:\CodeRL_A3\CodeRL\CodeRL\train.py", line 149, in main
    run_training(args, train_data)
  File "G:\CodeRL_A3\CodeRL\CodeRL\train.py", line 35, in run_training
    model = transformers.T5ForConditionalGeneration.from_pretrained(
  File "H:\Anaconda\envs\CodeRL_A3\lib\site-packages\transformers\modeling_utils.py", line 1489, in from_pretrained
    model = cls(config, *model_args, **model_kwargs)
TypeError: __init__() got an unexpected keyword argument 'tuning_mode'
""",
        ENV,
        "traceback.api_mismatch",
    ),
    (
        "TW-NLP/ChineseErrorCorrector#31",  # transformers renamed evaluation_strategy to eval_strategy
        """
Traceback (most recent call last):
  File "/root/autodl-tmp/ChineseErrorCorrector/ChineseErrorCorrector/llm/../llm/train/run.py", line 102, in <module>
    main()
  File "/root/autodl-tmp/ChineseErrorCorrector/ChineseErrorCorrector/llm/../llm/train/run.py", line 98, in main
    model.train_model(train_data=args.train_file, output_dir=args.output_dir, eval_data=args.dev_file)
  File "/root/autodl-tmp/ChineseErrorCorrector/ChineseErrorCorrector/llm/train/train_lora.py", line 174, in train_model
    training_args = TrainingArguments(
TypeError: TrainingArguments.__init__() got an unexpected keyword argument 'evaluation_strategy'
""",
        ENV,
        "traceback.api_mismatch",
    ),
    (
        "zhoubolei/TRN-pytorch#54",  # torch 0.3 had no no_grad
        """
Traceback (most recent call last):
  File "test_video.py", line 136, in <module>
    with torch.no_grad():
AttributeError: module 'torch' has no attribute 'no_grad'
""",
        ENV,
        "traceback.api_mismatch",
    ),
    (
        "shuzhenggao/SG-Trans#11",
        """
Traceback (most recent call last):
  File "../../main/train.py", line 821, in <module>
    set_defaults(args)
  File "../../main/train.py", line 204, in set_defaults
    train_it = os.path.join(data_dir, args.train_it[i])
TypeError: 'NoneType' object is not subscriptable
""",
        CODE,
        "traceback.user_code_bug",
    ),
    (
        "XingliangJin/Fine-Style#1",  # "There is indeed a bug in the training code"
        """
File "/home/user/Fine-Style/probe/../networks.py", line 290, in forward
assert(x.size(0) == y.size(0)) 
AttributeError: 'int' object has no attribute 'size'
""",  # noqa: W291
        CODE,
        "traceback.user_code_bug",
    ),
    (
        "pytorch/pytorch#152308",  # nn.Module's __getattr__ only dispatches the look-up on the user's class A
        """
Traceback (most recent call last):
  File "test.py", line 12, in <module>
    print(a.foo)
  File "xxx/python3.8/site-packages/torch/nn/modules/module.py", line 1729, in __getattr__
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
AttributeError: 'A' object has no attribute 'foo'
""",
        CODE,
        "traceback.user_code_bug",
    ),
    (
        "alibaba/RecIS#15",  # RecIS's own Trainer calls a method it renamed: a bug of the framework, not a mismatch
        """
[rank0]: Traceback (most recent call last):
[rank0]:   File "/workspace/3_model.py", line 287, in <module>
[rank0]:     train()
[rank0]:   File "/workspace/3_model.py", line 256, in train
[rank0]:     trainer.train_and_evaluate()
[rank0]:   File "/usr/local/lib/python3.10/dist-packages/recis/framework/trainer.py", line 354, in train_and_evaluate
[rank0]:     loop_fn = self._train_eval_loop
[rank0]: AttributeError: 'Trainer' object has no attribute '_train_eval_loop'. Did you mean: '_train_evaluate_loop'?
""",  # noqa: E501
        CODE,
        "traceback.library_bug",
    ),
    # -- data loading ----------------------------------------------------------------------------------------
    (
        "pytorch/pytorch#10938",  # a truncated PNG: a struct error deep in PIL's decoder
        """
  File "/home/cui/anaconda3/lib/python3.6/site-packages/PIL/ImageFile.py", line 212, in load
    s = read(self.decodermaxblock)
  File "/home/cui/anaconda3/lib/python3.6/site-packages/PIL/PngImagePlugin.py", line 592, in load_read
    cid, pos, length = self.png.read()
  File "/home/cui/anaconda3/lib/python3.6/site-packages/PIL/PngImagePlugin.py", line 113, in read
    length = i32(s)
  File "/home/cui/anaconda3/lib/python3.6/site-packages/PIL/_binary.py", line 76, in i32be
    return unpack(">I", c[o:o+4])[0]
struct.error: unpack requires a buffer of 4 bytes
""",
        DATA,
        "traceback.data_loading",
    ),
    (
        "zai-org/ChatGLM-6B#1196",  # the user's train.json was not valid JSON
        r"""
Traceback (most recent call last):
  File "D:\Anaconda3\envs\chatglm6b\lib\site-packages\datasets\packaged_modules\json\json.py", line 134, in _generate_tables
    dataset = json.load(f)
  File "D:\Anaconda3\envs\chatglm6b\lib\json\__init__.py", line 296, in load
    parse_constant=parse_constant, object_pairs_hook=object_pairs_hook, **kw)
  File "D:\Anaconda3\envs\chatglm6b\lib\json\__init__.py", line 348, in loads
    return _default_decoder.decode(s)
  File "D:\Anaconda3\envs\chatglm6b\lib\json\decoder.py", line 340, in decode
    raise JSONDecodeError("Extra data", s, end)
json.decoder.JSONDecodeError: Extra data: line 2 column 1 (char 259)
""",  # noqa: E501
        DATA,
        "traceback.data_loading",
    ),
    (
        "Suanmd/TR-MISR#3",  # the user's collate function stacks tensors of different shapes
        r"""
RuntimeError: Caught RuntimeError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "C:\Users\user\anaconda3\envs\endo\lib\site-packages\torch\utils\data\_utils\worker.py", line 302, in _worker_loop
    data = fetcher.fetch(index)
  File "C:\Users\user\anaconda3\envs\endo\lib\site-packages\torch\utils\data\_utils\fetch.py", line 52, in fetch
    return self.collate_fn(data)
  File "C:\Users\user\Desktop\TR-MISR-master\src\utils.py", line 65, in __call__
    return self.collateFunction(batch)
  File "C:\Users\user\Desktop\TR-MISR-master\src\utils.py", line 118, in collateFunction
    padded_lr_batch = torch.stack(lr_batch, dim=0)
RuntimeError: stack expects each tensor to be equal size, but got [24, 32, 64] at entry 0 and [24, 64, 32] at entry 1
""",  # noqa: E501
        CODE,
        "traceback.collate_bug",
    ),
    # -- configuration ---------------------------------------------------------------------------------------
    (
        "huggingface/nanotron#250",  # the YAML's dp*tp*pp (8) is not the world size the launch gave (4)
        """
Traceback (most recent call last):
  File "/home/nanotron/run_train.py", line 233, in <module>
    trainer = DistributedTrainer(config_file)
  File "/home/nanotron/src/nanotron/trainer.py", line 147, in __init__
    self.parallel_context = ParallelContext(
  File "/home/nanotron/src/nanotron/parallel/context.py", line 33, in __init__
    raise ValueError(
ValueError: ('The number of process requires to run all replicas (8)', 'must be equal to the world size (4).')
""",
        CONFIG,
        "traceback.config_assertion",
    ),
    (
        "maszhongming/MatchSum#11",  # "the batch_size should be a multiple of the number of GPUs"
        """
Traceback (most recent call last):
  File "train_matching.py", line 150, in <module>
    train_model(args)
  File "train_matching.py", line 70, in train_model
    assert args.batch_size % len(devices) == 0
AssertionError
""",
        CONFIG,
        "traceback.config_assertion",
    ),
    (
        "fenglinglwb/MAT#38",  # an assert of the model's own code
        r"""
 File "C:\Users\seoer\Downloads\MAT-main\torch_utils\ops\conv2d_resample.py", line 89, in conv2d_resample
    assert isinstance(groups, int) and (groups >= 1)
AssertionError
""",
        CODE,
        "traceback.assertion",
    ),
    (
        "eole-nlp/eole#254",
        """
Traceback (most recent call last):
  File "/usr/local/bin/eole", line 8, in <module>
    sys.exit(main())
  File "/eole/eole/bin/main.py", line 34, in main
    bin_cls.run(args)
  File "/eole/eole/bin/run/train.py", line 70, in run
    train(config)
  File "/eole/eole/bin/run/train.py", line 57, in train
    train_process(config, device_id=0)
  File "/eole/eole/train_single.py", line 135, in main
    checkpoint, vocabs, transforms, config = _init_train(config)
  File "/eole/eole/train_single.py", line 58, in _init_train
    checkpoint = load_checkpoint(config.training.train_from)
  File "/eole/eole/models/model_saver.py", line 55, in load_checkpoint
    _config = TrainConfig(**config_dict)
  File "/usr/local/lib/python3.10/dist-packages/pydantic/main.py", line 214, in __init__
    validated_self = self.__pydantic_validator__.validate_python(data, self_instance=self)
pydantic_core._pydantic_core.ValidationError: 32 validation errors for TrainConfig
src_vocab
  Field required [type=missing, input_value={'_sliding_window_pattern...ze': 262144, 'data': {}}, input_type=dict]
""",
        CONFIG,
        "traceback.config_validator",
    ),
    (
        "Sachini/niloc#10",  # "setup the paths as in 3 of instructions"
        """
  File "/home/omer/anaconda3/envs/niloc_test/lib/python3.8/site-packages/omegaconf/_utils.py", line 610, in _raise
    raise ex  # set end OC_CAUSE=1 for full backtrace
omegaconf.errors.ConfigAttributeError: Key 'io' is not in struct
        full_key: io
        reference_type=Optional[Dict[Union[str, Enum], Any]]
        object_type=dict
""",
        CONFIG,
        "traceback.config_validator",
    ),
    (
        "swar/Swar-Chia-Plot-Manager#250",  # "There must be ONE space" after the colon in config.yaml
        r"""
yaml.scanner.ScannerError: mapping values are not allowed here
  in "C:\Users\Pat\Desktop\Swar-Chia-Plot-Manager-main\config.yaml", line 9, column 8
""",
        CONFIG,
        "traceback.config_validator",
    ),
    (
        "tiiuae/onebitllms#10",
        """
Traceback (most recent call last):
  File "/content/onebitllms/examples/sft.py", line 130, in <module>
    script_args, training_args, model_args = parser.parse_args_and_config()
                                             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/local/lib/python3.12/dist-packages/trl/scripts/utils.py", line 335, in parse_args_and_config
    output = self.parse_args_into_dataclasses(args=args, return_remaining_strings=return_remaining_strings)
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/local/lib/python3.12/dist-packages/trl/scripts/_hf_argparser.py", line 380, in parse_args_into_dataclasses
    raise ValueError(f"Some specified arguments are not used by the HfArgumentParser: {remaining_args}")
ValueError: Some specified arguments are not used by the HfArgumentParser: ['--torch_dtype', 'bfloat16']
""",
        CONFIG,
        "traceback.config_validator",
    ),
    (
        "RunxinXu/TSAR#13",  # TrainingArguments' own __post_init__ check
        """
Traceback (most recent call last):
  File "/data/hmzhong/TSAR/code/run.py", line 747, in <module>
    main()
  File "/data/hmzhong/TSAR/code/run.py", line 165, in main
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
  File "/home/hmzhong/anaconda3/envs/xs/lib/python3.9/site-packages/transformers/hf_argparser.py", line 332, in parse_args_into_dataclasses
    obj = dtype(**inputs)
  File "<string>", line 110, in __init__
  File "/home/hmzhong/anaconda3/envs/xs/lib/python3.9/site-packages/transformers/training_args.py", line 1180, in __post_init__
    raise ValueError(
ValueError: --load_best_model_at_end requires the save and eval strategy to match, but found
- Evaluation strategy: epoch
- Save strategy: steps
""",  # noqa: E501
        CONFIG,
        "traceback.config_validator",
    ),
    (
        "huggingface/trl#3872",  # the output directory is not writable in the container
        """
Traceback (most recent call last):
  File "/app/quickstart.py", line 8, in <module>
    trainer = SFTTrainer(
              ^^^^^^^^^^^
  File "/app/trl/trainer/sft_trainer.py", line 544, in __init__
    super().__init__(
  File "/usr/local/lib/python3.12/site-packages/transformers/utils/deprecation.py", line 172, in wrapped_func
    return func(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^
  File "/usr/local/lib/python3.12/site-packages/transformers/trainer.py", line 701, in __init__
    os.makedirs(self.args.output_dir, exist_ok=True)
  File "<frozen os>", line 225, in makedirs
PermissionError: [Errno 13] Permission denied: 'Qwen3-0.6B-SFT'
""",
        CONFIG,
        "traceback.permission_denied",
    ),
    (
        "bene-ges/nemo_compatible#16",  # Lightning's settings check: trainer.devices named a GPU the node lacks
        """
lightning_fabric.utilities.exceptions.MisconfigurationException: You requested gpu: [1]
 But your machine only has: [0]
""",
        CONFIG,
        "traceback.config_validator",
    ),
    # -- storage, memory, devices ----------------------------------------------------------------------------
    (
        "YuanGongND/ast#30",
        """
Traceback (most recent call last):
  File "/home/ubuntu/ast_conv/venvast/lib/python3.7/site-packages/torch/serialization.py", line 379, in save
    _save(obj, opened_zipfile, pickle_module, pickle_protocol)
  File "/home/ubuntu/ast_conv/venvast/lib/python3.7/site-packages/torch/serialization.py", line 499, in _save
    zip_file.write_record(name, storage.data_ptr(), num_bytes)
OSError: [Errno 28] No space left on device
""",
        FailureClass.STORAGE,
        "traceback.errno_enospc",
    ),
    (
        "pytorch/pytorch#10577",  # "The server's disc was saturated"
        """
Traceback (most recent call last):
  File "train.py", line 250, in <module>
    torch.save(best_model.state_dict(), join(OUTD, "best_model.pt"))
  File "/home/usern290/Venvs/pytorch.1.0.1/lib/python3.7/site-packages/torch/serialization.py", line 218, in save
    return _with_file_like(f, "wb", lambda f: _save(obj, f, pickle_module, pickle_protocol))
  File "/home/user290/Venvs/pytorch.1.0.1/lib/python3.7/site-packages/torch/serialization.py", line 143, in _with_file_like
    return body(f)
  File "/home/user290/Venvs/pytorch.1.0.1/lib/python3.7/site-packages/torch/serialization.py", line 218, in <lambda>
    return _with_file_like(f, "wb", lambda f: _save(obj, f, pickle_module, pickle_protocol))
  File "/home/user290/Venvs/pytorch.1.0.1/lib/python3.7/site-packages/torch/serialization.py", line 297, in _save
    serialized_storages[key]._write_file(f, _should_read_directly(f))
RuntimeError: write(): fd 29 failed with Input/output error
""",  # noqa: E501
        FailureClass.STORAGE,
        "traceback.errno_eio",
    ),
    (
        "Zheng222/IDN-tensorflow#5",
        r"""
Traceback (most recent call last):
  File "train_SR.py", line 46, in <module>
    np.save(train_hr_npy, train_hr_imgs)
  File "D:\anaconda\envs\lhxten\lib\site-packages\numpy\lib\npyio.py", line 536, in save
    pickle_kwargs=pickle_kwargs)
  File "D:\anaconda\envs\lhxten\lib\site-packages\numpy\lib\format.py", line 633, in write_array
    pickle.dump(array, fp, protocol=2, **pickle_kwargs)
MemoryError
""",
        FailureClass.HOST_OOM,
        "traceback.host_oom",
    ),
    (
        "real-stanford/flingbot#11",  # Ray's memory monitor killed a task: the node's memory, not a GPU's
        """
Traceback (most recent call last):
  File "run_sim.py", line 152, in <module>
    remaining_observations=remaining_observations)
  File "/home/zcs/work/train-my-fling/flingbot/utils.py", line 416, in step_env
    for obs, env_id in ray.get(step_retval):
  File "/home/zcs/miniconda3/envs/flingbot/lib/python3.6/site-packages/ray/_private/client_mode_hook.py", line 105, in wrapper
    return func(*args, **kwargs)
  File "/home/zcs/miniconda3/envs/flingbot/lib/python3.6/site-packages/ray/_private/worker.py", line 2523, in get
    raise value
ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.
""",  # noqa: E501
        FailureClass.HOST_OOM,
        "traceback.host_oom",
    ),
    (
        "jax-ml/jax#22755",  # XLA's device allocator
        """
jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 3743729664 bytes.
""",
        FailureClass.GPU_OOM,
        "traceback.gpu_oom",
    ),
    (
        "pytorch/pytorch#8976",  # the main process sees its DataLoader worker SIGKILLed: the host OOM killer
        """
Traceback (most recent call last):
  File "/public/home/wl_ligexian/anaconda3/envs/py38/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
  File "/public/home/wl_ligexian/anaconda3/envs/py38/lib/python3.8/queue.py", line 179, in get
    self.not_empty.wait(remaining)
  File "/public/home/wl_ligexian/anaconda3/envs/py38/lib/python3.8/threading.py", line 306, in wait
    gotit = waiter.acquire(True, timeout)
  File "/public/home/wl_ligexian/anaconda3/envs/py38/lib/python3.8/site-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid 1817) is killed by signal: Killed. 
""",  # noqa: E501, W291
        FailureClass.HOST_OOM,
        "traceback.worker_killed",
    ),
    (
        "FoundationVision/GenerateU#10",
        """
File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 114, in forward
    return F.linear(input, self.weight, self.bias)
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 496.00 MiB. GPU 0 has a total capacty of 14.75 GiB of which 235.06 MiB is free. Process 20398 has 14.52 GiB memory in use. Of the allocated memory 14.06 GiB is allocated by PyTorch, and 330.42 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF
""",  # noqa: E501
        FailureClass.GPU_OOM,
        "traceback.gpu_oom",
    ),
    (
        "seiichiinoue/odcnn#5",  # train.py picks cuda:1 on a machine with one GPU
        r"""
Traceback (most recent call last):
  File "train.py", line 9, in <module>
    net = net.to(device)
  File "C:\Users\Chris Olin\PycharmProjects\onset_detection\venv\lib\site-packages\torch\nn\modules\module.py", line 432, in to
    return self._apply(convert)
  File "C:\Users\Chris Olin\PycharmProjects\onset_detection\venv\lib\site-packages\torch\nn\modules\module.py", line 208, in _apply
    module._apply(fn)
  File "C:\Users\Chris Olin\PycharmProjects\onset_detection\venv\lib\site-packages\torch\nn\modules\module.py", line 230, in _apply
    param_applied = fn(param)
  File "C:\Users\Chris Olin\PycharmProjects\onset_detection\venv\lib\site-packages\torch\nn\modules\module.py", line 430, in convert
    return t.to(device, dtype if t.is_floating_point() else None, non_blocking)
RuntimeError: CUDA error: invalid device ordinal
""",  # noqa: E501
        CONFIG,
        "traceback.device_ordinal",
    ),
    (
        "Tianxinhuang/ComPC#5",
        """
  File "/home/xxx/ComPC/complete.py", line 532, in train_step
    loss.backward()
  File "/home/xxx/miniconda3/envs/compc/lib/python3.10/site-packages/torch/_tensor.py", line 396, in backward
    torch.autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)
  File "/home/xxx/miniconda3/envs/compc/lib/python3.10/site-packages/torch/autograd/__init__.py", line 173, in backward
    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
RuntimeError: CUDA error: an illegal memory access was encountered
""",
        FailureClass.CUDA_ERROR,
        "traceback.cuda_error",
    ),
    (
        "bigscience-workshop/bigscience tr1-13B-base/chronicles.md",  # a GPU's memory failed hours into the run
        """
  File "/gpfswork/rech/six/commun/conda/tr1-13B/lib/python3.8/site-packages/torch/autograd/__init__.py", line 145, in backward
    Variable._execution_engine.run_backward(
RuntimeError: transform: failed to synchronize: cudaErrorECCUncorrectable: uncorrectable ECC error encountered
""",  # noqa: E501
        FailureClass.GPU_HARDWARE,
        "traceback.gpu_fault",
    ),
    # -- launchers and what nothing explains -------------------------------------------------------------------
    (
        "GanjinZero/RRHF#35",  # the terminal that started torch.distributed.launch went away (SIGHUP)
        """
torch.distributed.elastic.multiprocessing.api.SignalException: Process 2920830 got signal: 1
""",
        FailureClass.CANCELLED,
        "traceback.signal",
    ),
    (
        "FactoDeepLearning/DAN#4",  # no font in the Fonts folder: torch.randint over an empty range
        """
Traceback (most recent call last):
  File "main_syn_line.py", line 181, in <module>
    main()
  File "main_syn_line.py", line 177, in main
    train_and_test(0, params)
  File "main_syn_line.py", line 65, in train_and_test
    model.generate_syn_line_dataset("READ_2016_syn_line")  # ["RIMES_syn_line", "READ_2016_syn_line"]
  File "/home/jordy/code/review/DAN/OCR/ocr_manager.py", line 89, in generate_syn_line_dataset
    img = dataset.generate_typed_text_line_image(sample["label"])
  File "/home/jordy/code/review/DAN/OCR/ocr_dataset_manager.py", line 859, in generate_typed_text_line_image
    return generate_typed_text_line_image(text, self.params["config"]["synthetic_data"]["config"])
  File "/home/jordy/code/review/DAN/OCR/ocr_dataset_manager.py", line 985, in generate_typed_text_line_image
    font_path = config["valid_fonts"][randint(0, len(config["valid_fonts"]))]
  File "/home/jordy/code/review/DAN/basic/utils.py", line 46, in randint
    return int(torch.randint(low, high, (1, )))
RuntimeError: random_ expects 'from' to be less than 'to', but got from=0 >= to=0
""",
        CODE,
        "traceback.bare_runtime_error",
    ),
    (
        "facebookresearch/fairseq#1215",  # fp16 loss scale at its floor (message garbled; the header is Python's)
        """
Traceback (most recent call last):
  File "/home/sumegha/fairseq/fairseq/optim/fp16_optimizer.py", line 189, in clip_grad_norm
    ).format(self.args. scale reached (0.0001). Your loss is probably exploding. Try lowering the learning rate, using gradient clipping or increasing the batch size.min_loss_scale))
FloatingPointError: Minimum loss.
""",  # noqa: E501
        FailureClass.LOSS_DIVERGENCE,
        "traceback.nonfinite_value",
    ),
]


def _text_of(source: str) -> str:
    return next(text for thread, text, *_ in CASES if thread == source)


@pytest.mark.parametrize(("source", "text", "cls", "rule"), CASES, ids=[c[0] for c in CASES])
def test_a_real_traceback_gets_its_class(source: str, text: str, cls: FailureClass, rule: str) -> None:
    verdict = judge(traceback_from(text))
    assert (verdict.failure_class, verdict.rule_id) == (cls, rule), verdict.reason


def test_confident_verdicts_outrank_the_generic_exception_rules_but_no_specific_signature() -> None:
    priorities = {judge(traceback_from(text)).priority for _, text, _, rule in CASES if "bare" not in rule}
    assert min(priorities) >= 46 and max(priorities) <= 49


def test_the_phrase_says_where_it_was_raised_and_who_called() -> None:
    # salesforce/CodeRL#61: the library frame raised it, train.py called
    verdict = judge(traceback_from(_text_of("salesforce/CodeRL#61")))
    assert verdict.reason == "API/version mismatch: TypeError raised in transformers, called from train.py"
    assert verdict.ref.text == "TypeError: __init__() got an unexpected keyword argument 'tuning_mode'"


def test_a_bare_runtime_error_is_a_weak_symptom() -> None:
    verdict = judge(traceback_from(_text_of("FactoDeepLearning/DAN#4")))
    assert role_of(verdict) is Role.SYMPTOM and 20 <= verdict.priority <= 30


def test_the_collective_backend_failing_is_only_a_symptom_of_a_timeout() -> None:
    # vllm-project/vllm#10453: every rank prints it; the cause is elsewhere (here an NCCL internal error)
    text = """
[rank1]: Traceback (most recent call last):
[rank1]:   File "/vllm-workspace/test.py", line 8, in <module>
[rank1]:     dist.all_reduce(data, op=dist.ReduceOp.SUM)
[rank1]:   File "/usr/local/lib/python3.12/dist-packages/torch/distributed/c10d_logger.py", line 83, in wrapper
[rank1]:     return func(*args, **kwargs)
[rank1]:            ^^^^^^^^^^^^^^^^^^^^^
[rank1]:   File "/usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py", line 2501, in all_reduce
[rank1]:     work = group.allreduce([tensor], opts)
[rank1]:            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5
[rank1]: ncclInternalError: Internal check failed.
[rank1]: Last error:
"""  # noqa: E501
    verdict = judge(traceback_from(text))
    assert (verdict.failure_class, role_of(verdict)) == (FailureClass.COLLECTIVE_TIMEOUT, Role.SYMPTOM)
    assert verdict.ref.rank == 1
    parsed = _parsed(text)
    assert parsed is not None and judge(parsed).rule_id == "traceback.dist_backend"


def test_a_terminate_whose_what_never_came_is_a_weak_symptom() -> None:
    # NVIDIA/Megatron-LM#1051, printed beside the watchdog timeouts of its ranks
    record = _parsed(next(text for source, text, *_ in PARSER_ONLY if source == "NVIDIA/Megatron-LM#1051"))
    assert record is not None
    verdict = judge(record)
    assert role_of(verdict) is Role.SYMPTOM and verdict.priority <= 30


def test_a_launcher_summary_names_the_signal_as_a_symptom() -> None:
    # lzhxmu/CPPO#6: torchrun's summary of a child killed by SIGKILL (the host OOM killer's signal)
    text = """
  File "/home/tiger/.pyenv/versions/3.11.2/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 269, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
src/open_r1/grpo_gsm.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-05-21_15:43:03
  host      : mlxlab115rp2n7682d40d9-20250521025625-6dyyd3-8nir8b-worker
  rank      : 0 (local_rank: 0)
  exitcode  : -9 (pid: 14750)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 14750
============================================================
"""  # noqa: E501, W291
    for record in (traceback_from(text, kind="child_failed"), _parsed(text)):
        assert record is not None and record.kind == "child_failed"
        verdict = judge(record)
        assert (verdict.failure_class, verdict.rule_id) == (FailureClass.HOST_OOM, "traceback.launcher_summary")
        assert role_of(verdict) is Role.SYMPTOM and verdict.priority <= 30


# -- end to end: the parser's record of the same text -----------------------------------------------------------

_HEADERS = [re.compile(pattern) for pattern in HEADER_PATTERNS]


def _parsed(text: str) -> Traceback | None:
    """read_structure's record of the traceback in `text`, read from its first header line."""
    lines = text.strip("\n").split("\n")
    at = next((i for i, line in enumerate(lines) if any(h.search(line) for h in _HEADERS)), None)
    if at is None:
        return None  # an excerpt without its header: only records made from the text test it
    record, _ = read_structure(lines[at:], at + 1, lambda line, number: LineRef(file="job.log", line=number, text=line))
    assert isinstance(record, Traceback)
    return record


PARSED = [(source, record, cls, rule) for source, text, cls, rule in CASES if (record := _parsed(text)) is not None]


def test_most_cases_hold_a_whole_traceback_the_parser_reads() -> None:
    assert len(PARSED) >= 20


@pytest.mark.parametrize(("source", "record", "cls", "rule"), PARSED, ids=[p[0] for p in PARSED])
def test_the_parsers_record_of_a_real_traceback_gets_its_class(
    source: str, record: Traceback, cls: FailureClass, rule: str
) -> None:
    verdict = judge(record)
    assert (verdict.failure_class, verdict.rule_id) == (cls, rule), verdict.reason


# Tracebacks only the parser reads (rich's box, C++ terminates), and one of a launcher's wait loop; the texts
# are those of tests/parsers/test_tracebacks.py, with their sources.
PARSER_ONLY = [
    (
        "LinkSoul-AI/Chinese-Llama-2-7b#27",  # Ctrl-C reaches torchrun's wait loop as SIGINT
        """
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/agent/server/api.py", line 736, in run
    result = self._invoke_run(role)
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/agent/server/api.py", line 877, in _invoke_run
    time.sleep(monitor_interval)
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/multiprocessing/api.py", line 62, in _terminate_process_handler
    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)
torch.distributed.elastic.multiprocessing.api.SignalException: Process 1313 got signal: 2
""",  # noqa: E501
        FailureClass.CANCELLED,
        "traceback.signal",
    ),
    (
        "xieyuser/GS-LIVM#12",  # the thread's excerpt ends inside frame #4
        """
terminate called after throwing an instance of 'c10::Error'
  what():  CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.

Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >) + 0x6b (0x7f8f788e56bb in /home/shu/catkin_GSL/src/GS-LIVM/thirdparty/libtorch/lib/libc10.so)
frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&) + 0xbf (0x7f8f788e05ef in /home/shu/catkin_GSL/src/GS-LIVM/thirdparty/libtorch/lib/libc10.so)
frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x58f (0x7f8f78b77f5f in /home/shu/catkin_GSL/src/GS-LIVM/thirdparty/libtorch/lib/libc10_cuda.so)
frame #3: <unknown function> + 0x11d6d04 (0x7f8f7a011d04 in /home/shu/catkin_GSL/src/GS-LIVM/thirdparty/libtorch/lib/libtorch_cuda.so)
""",  # noqa: E501
        FailureClass.CUDA_ERROR,
        "traceback.cuda_error",
    ),
    (
        "sgl-project/sglang#1693",  # NCCL's watchdog: a symptom of whatever held the collective up
        """
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG 3 Rank 5] Process group watchdog thread terminated with exception: [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3b6d41df86 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)
frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f3b6e71a8d2 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)
""",  # noqa: E501
        FailureClass.COLLECTIVE_TIMEOUT,
        "traceback.dist_backend",
    ),
    (
        "tatsu-lab/stanford_alpaca#65",  # the watchdog's own abort, thrown as a plain std::runtime_error
        """
terminate called after throwing an instance of 'std::runtime_error'
  what():  [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2778, OpType=_ALLGATHER_BASE, Timeout(ms)=1800000) ran for 1801649 milliseconds before timing out.
""",  # noqa: E501
        FailureClass.COLLECTIVE_TIMEOUT,
        "traceback.dist_backend",
    ),
    (
        "pytorch/pytorch#58155",  # A100 clusters failing after days: the interconnect, as CUDA names it
        """
terminate called after throwing an instance of 'c10::Error'
  what():  CUDA error: uncorrectable NVLink error detected during the execution
Exception raised from create_event_internal at /pytorch/c10/cuda/CUDACachingAllocator.cpp:733 (most recent call first):
""",  # noqa: E501
        FailureClass.GPU_HARDWARE,
        "traceback.gpu_fault",
    ),
    (
        "NVIDIA/Megatron-LM#1051",  # the excerpt ends before the what(): only the C++ type is known
        """
terminate called after throwing an instance of 'std::runtime_error'
""",
        CODE,
        "traceback.terminate_without_what",
    ),
    (
        "fastapi/typer docs/tutorial/exceptions.md",  # typer's rich traceback, its color markup removed
        """
╭──────────────── Traceback (most recent call last) ────────────────╮
│ /home/user/code/superapp/main.py:12 in <module>                   │
│                                                                   │
│    9                                                              │
│   10                                                              │
│   11 if __name__ == "__main__":                                   │
│ ❱ 12 │   app()                                                    │
│   13                                                              │
│                                                                   │
│ ╭─────────────────────────── locals ────────────────────────────╮ │
│ │ __annotations__ = {}                                          │ │
│ │    __builtins__ = <module 'builtins' (built-in)>              │ │
│ │      __cached__ = None                                        │ │
│ │         __doc__ = None                                        │ │
│ │        __file__ = 'main.py'                                   │ │
│ │      __loader__ = <_frozen_importlib_external.SourceFileLoad… │ │
│ │                   object at 0x7f047db1c050>                   │ │
│ │        __name__ = '__main__'                                  │ │
│ │     __package__ = None                                        │ │
│ │        __spec__ = None                                        │ │
│ │             app = <typer.main.Typer object at 0x7f047db51d90> │ │
│ │            main = <function main at 0x7f047db56830>           │ │
│ │           typer = <module 'typer' from                        │ │
│ │                   '/home/user/code/superapp/env/lib/python3.… │ │
│ ╰───────────────────────────────────────────────────────────────╯ │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/typer/ma │
│ in.py:328 in __call__                                             │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/typer/ma │
│ in.py:311 in __call__                                             │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/click/co │
│ re.py:1130 in __call__                                            │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/typer/co │
│ re.py:723 in main                                                 │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/typer/co │
│ re.py:216 in _main                                                │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/click/co │
│ re.py:1404 in invoke                                              │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/click/co │
│ re.py:760 in invoke                                               │
│                                                                   │
│ /home/user/code/superapp/env/lib/python3.7/site-packages/typer/ma │
│ in.py:683 in wrapper                                              │
│                                                                   │
│ /home/user/code/superapp/main.py:8 in main                        │
│                                                                   │
│    5                                                              │
│    6 @app.command()                                               │
│    7 def main(name: str = "morty"):                               │
│ ❱  8 │   print(name + 3)                                          │
│    9                                                              │
│   10                                                              │
│   11 if __name__ == "__main__":                                   │
│                                                                   │
│ ╭──── locals ────╮                                                │
│ │ name = 'morty' │                                                │
│ ╰────────────────╯                                                │
╰───────────────────────────────────────────────────────────────────╯
TypeError: can only concatenate str (not "int") to str
""",
        CODE,
        "traceback.user_code_bug",
    ),
]


@pytest.mark.parametrize(("source", "text", "cls", "rule"), PARSER_ONLY, ids=[c[0] for c in PARSER_ONLY])
def test_a_traceback_only_the_parser_reads_gets_its_class(source: str, text: str, cls: FailureClass, rule: str) -> None:
    record = _parsed(text)
    assert record is not None
    verdict = judge(record)
    assert (verdict.failure_class, verdict.rule_id) == (cls, rule), verdict.reason


# flrngel/TagSpace-tensorflow#1 and facebookresearch/ParlAI#806: f-strings parsed by Python 3.5; both threads
# concluded "use Python 3.6", so the SyntaxError names the interpreter, not a typo
FSTRING_PY35 = [
    (
        '  File "train.py", line 66',
        "    result = sess.run(train_opts, feed_dict={f'{model.__class__.__name__}/doc:0': batch_input,"
        " f'{model.__class__.__name__}/tag_flag:0': batch_tags, f'{model.__class__.__name__}/lr:0': [lr]})",
        "                                                                               ^",
        "SyntaxError: invalid syntax",
    ),
    (
        'File "/ParlAI/parlai/core/build_data.py", line 232',
        'module_name = f"parlai.zoo.{animal}"',
        "                                                             ^",
        "SyntaxError: invalid syntax",
    ),
]


@pytest.mark.parametrize("lines", FSTRING_PY35, ids=["tagspace", "parlai"])
def test_a_syntax_error_on_an_f_string_is_a_python_older_than_the_code(tmp_path: Path, lines: tuple[str, ...]) -> None:
    report = triage_lines(tmp_path, *lines)
    assert report.diagnosis.failure_class is FailureClass.ENVIRONMENT
    assert "traceback.syntax_too_new" in {e.rule_id for e in report.events if hasattr(e, "rule_id")}


def test_a_call_named_f_is_no_f_string() -> None:
    """torchrun's own frame (pytorch/pytorch:torch/distributed/elastic/multiprocessing/errors/__init__.py)."""
    assert _FSTRING.search("return f(*args, **kwargs)") is None


def test_python_2_code_run_by_python_3_is_the_wrong_interpreter(tmp_path: Path) -> None:
    """meetps/pytorch-semseg#24: 'you're using python 3.x while this project was written in python 2.x'."""
    report = triage_lines(
        tmp_path,
        "Traceback (most recent call last):",
        '  File "train.py", line 14, in <module>',
        "    from ptsemseg.loader import get_loader, get_data_path",
        '  File "/home/yuanshuai/code/pytorch-semseg/ptsemseg/loader/pascal_voc_loader.py", line 130',
        '    print "Pre-encoding segmentation masks..."',
        "                                             ^",
        "SyntaxError: Missing parentheses in call to 'print'",
    )
    assert report.diagnosis.failure_class is FailureClass.ENVIRONMENT
    assert "traceback.python2_code" in {e.rule_id for e in report.events if hasattr(e, "rule_id")}


def test_a_local_model_path_read_as_a_hub_repo_id_is_a_wrong_path(tmp_path: Path) -> None:
    """PRIME-RL/TTRL#25: '~/models/...' is no directory from_pretrained can open, so it went to the Hub's validator."""
    report = triage_lines(
        tmp_path,
        '  File "/share/gha/envs/verl/lib/python3.11/site-packages/huggingface_hub/utils/_validators.py", line 154,'
        " in validate_repo_id",
        "    raise HFValidationError(",
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name':"
        " '~/models/deepseek-llm-7b-chat'. Use `repo_type` argument if needed.",
    )
    assert report.diagnosis.failure_class is FailureClass.CONFIG_ERROR
    assert "traceback.model_path_missing" in {e.rule_id for e in report.events if hasattr(e, "rule_id")}
