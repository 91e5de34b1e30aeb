"""The traceback rules about reading training data, on real tracebacks: a text decode error is the data's unless a
deserialiser read a binary file through a text handle (the code's); tensors of unequal size are the code's when a
collate function stacks samples of one rank, the data's inside a dataset's __getitem__ or when a sample's rank
differs; a value numpy/pandas/scikit-learn cannot read as a number is the data's."""

from __future__ import annotations

import pytest
from traceback_records import traceback_from

from crashcart.agent.tracebacks import judge
from crashcart.knowledge.taxonomy import FailureClass

# (source thread, traceback as printed, expected class, expected rule)
CASES = [
    (
        "stochasticai/xTuring#261",  # the JSONL lacked the fields xTuring's InstructionDataset reads
        """
Traceback (most recent call last):
  File "/content/main.py", line 8, in <module>
    dataset = InstructionDataset('./dataset/tasks.jsonl')
  File "/usr/local/lib/python3.10/dist-packages/xturing/datasets/instruction_dataset.py", line 64, in __init__
    self.data = {"train": HFDataset.from_dict(self.from_jsonl(path))}
  File "/usr/local/lib/python3.10/dist-packages/xturing/datasets/instruction_dataset.py", line 93, in from_jsonl
    raise ValueError(
ValueError: The jsonl file should have keys text, instruction and target
""",
        FailureClass.DATA_ERROR,
        "traceback.data_loading",
    ),
    (
        "ExplainableML/KG-SP#3",  # "dataset.py opened pickle files in text mode": fixed with 'rb'
        """
Traceback (most recent call last):
  File "train.py", line 348, in <module>
    main()
  File "train.py", line 43, in main
    trainset = dset.CompositionDataset(
  File "/sharefiles1/zhangyanyi/projects/kg-sp/data/dataset.py", line 168, in __init__
    sample_mask = pickle.load(fo)
  File "/home/zhangyanyi/miniconda3/envs/czsl-1/lib/python3.8/codecs.py", line 322, in decode
    (result, consumed) = self._buffer_decode(data, self.errors, final)
UnicodeDecodeError: 'utf-8' codec can't decode byte 0x80 in position 0: invalid start byte
""",
        FailureClass.CODE_BUG,
        "traceback.binary_read_as_text",
    ),
    (
        "jingyaogong/minimind#551",  # pretrain_hq.jsonl is not valid UTF-8 from its first byte
        """
Traceback (most recent call last):
  File "/group/40023/silongsheng/llm_projects/llmMinimind/trainer/train_pretrain.py", line 132, in <module>
    train_ds = PretrainDataset(args.data_path, tokenizer, max_length=args.max_seq_len)
  File "/group/40023/silongsheng/llm_projects/llmMinimind/dataset/lm_dataset.py", line 21, in __init__
    self.samples = self.load_data(data_path)
  File "/group/40023/silongsheng/llm_projects/llmMinimind/dataset/lm_dataset.py", line 26, in load_data
    for line_num, line in enumerate(f, 1):
  File "/group/40023/conda_envs/minimind/lib/python3.10/codecs.py", line 322, in decode
    (result, consumed) = self._buffer_decode(data, self.errors, final)
UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe6 in position 0: invalid continuation byte
""",  # noqa: E501
        FailureClass.DATA_ERROR,
        "traceback.text_decoding",
    ),
    (
        "qibin0506/Cortex#13",  # a library's dataset reads text lines; the downloaded .pkl was corrupt
        """
[rank1]:   File "/home/youwei/github/Cortex/.venv/lib/python3.12/site-packages/llm_trainer/dataset.py", line 45, in __init__
[rank1]:     for line in f:
[rank1]:                 ^
[rank1]:   File "<frozen codecs>", line 322, in decode
[rank1]: UnicodeDecodeError: 'utf-8' codec can't decode byte 0x80 in position 0: invalid start byte
""",  # noqa: E501
        FailureClass.DATA_ERROR,
        "traceback.text_decoding",
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
        FailureClass.CODE_BUG,
        "traceback.collate_bug",
    ),
    (
        "hollowstrawberry/kohya-colab#185",  # cached latents of different sizes in one bucket: the dataset's images
        """
RuntimeError: Caught RuntimeError in DataLoader worker process 2.
Original Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/_utils/worker.py", line 308, in _worker_loop
    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]
  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/_utils/fetch.py", line 51, in fetch
    data = [self.dataset[idx] for idx in possibly_batched_index]
  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/_utils/fetch.py", line 51, in <listcomp>
    data = [self.dataset[idx] for idx in possibly_batched_index]
  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/dataset.py", line 348, in __getitem__
    return self.datasets[dataset_idx][sample_idx]
  File "/content/kohya-trainer/library/train_util.py", line 1189, in __getitem__
    example["latents"] = torch.stack(latents_list) if latents_list[0] is not None else None
RuntimeError: stack expects each tensor to be equal size, but got [4, 144, 112] at entry 0 and [4, 136, 120] at entry 3
""",  # noqa: E501
        FailureClass.DATA_ERROR,
        "traceback.data_loading",
    ),
    (
        "VainF/DeepLabV3Plus-Pytorch#114",  # one label mask saved in colour among the class-index masks
        r"""
RuntimeError: Caught RuntimeError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "C:*\torch\utils\data\_utils\worker.py", line 308, in _worker_loop
    data = fetcher.fetch(index)
  File "C:*\torch\utils\data\_utils\fetch.py", line 54, in fetch
    return self.collate_fn(data)
  File "C:*\torch\utils\data\_utils\collate.py", line 265, in default_collate
    return collate(batch, collate_fn_map=default_collate_fn_map)
RuntimeError: stack expects each tensor to be equal size, but got [768, 768] at entry 0 and [768, 768, 3] at entry 1
""",
        FailureClass.DATA_ERROR,
        "traceback.data_loading",
    ),
    (
        "Suanmd/TR-MISR#7",  # the project's collate function stacks frames of different sizes, as in #3
        """
RuntimeError: Caught RuntimeError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "/home/uzma/.local/lib/python3.6/site-packages/torch/utils/data/_utils/worker.py", line 287, in _worker_loop
    data = fetcher.fetch(index)
  File "/home/uzma/.local/lib/python3.6/site-packages/torch/utils/data/_utils/fetch.py", line 52, in fetch
    return self.collate_fn(data)
  File "/home/uzma/TR-MISR/src/utils.py", line 65, in __call__
    return self.collateFunction(batch)
  File "/home/uzma/TR-MISR/src/utils.py", line 114, in collateFunction
    padded_lr_batch = torch.stack(lr_batch, dim=0)
RuntimeError: stack expects each tensor to be equal size, but got [24, 32, 32] at entry 0 and [24, 32, 64] at entry 1
""",
        FailureClass.CODE_BUG,
        "traceback.collate_bug",
    ),
    (
        "DavidJBianco/Clearcut#2",  # a user-agent string in a column the model reads as numbers
        """
#Traceback (most recent call last):
  File "./train_flows_rf.py", line 125, in <module>
    clf.fit(train.drop('class', axis=1), y)
  File "/usr/local/lib/python2.7/dist-packages/sklearn/ensemble/forest.py", line 250, in fit
    X = check_array(X, accept_sparse="csc", dtype=DTYPE)
  File "/usr/local/lib/python2.7/dist-packages/sklearn/utils/validation.py", line 527, in check_array
    array = np.asarray(array, dtype=dtype, order=order)
  File "/usr/local/lib/python2.7/dist-packages/numpy/core/numeric.py", line 538, in asarray
    return array(a, dtype, copy=False, order=order)
ValueError: could not convert string to float: Mozilla/5.0 (Windows NT 10.0; WOW64; rv:54.0) Gecko/20100101 Firefox/54.0
""",
        FailureClass.DATA_ERROR,
        "traceback.malformed_value",
    ),
    (
        "endernewton/tf-faster-rcnn#171",  # the annotation cache an earlier run pickled is empty
        """
Traceback (most recent call last):
  File "/media/tf/MyFiles/codes/tf-faster-rcnn/tools/../lib/datasets/voc_eval.py", line 126, in voc_eval
    recs = pickle.load(f)
EOFError: Ran out of input
""",
        FailureClass.DATA_ERROR,
        "traceback.empty_pickle",
    ),
    (
        "Suanmd/TR-MISR#2",  # nothing in split_data/val: the validation score is divided by an empty split's size
        """
Traceback (most recent call last):
  File "h:\\git\\TR-MISR\\src\\train.py", line 302, in <module>
    main(config)
  File "h:\\git\\TR-MISR\\src\\train.py", line 289, in main
    trainAndGetBestModel(fusion_model, optimizer, dataloaders, baseline_cpsnrs, config)
  File "h:\\git\\TR-MISR\\src\\train.py", line 173, in trainAndGetBestModel
    val_score /= len(dataloaders['val'].dataset)
ZeroDivisionError: float division by zero
""",
        FailureClass.DATA_ERROR,
        "traceback.empty_collection",
    ),
    (
        "huangmozhilv/promise12_vnet_pytorch#2",  # no training image where the loader looks: an empty list's mean
        """
Traceback (most recent call last):
  File "main.py", line 82, in <module>
    train.main(params, args)
  File "/mnt/14A6B754A6B73558/Spline.ai/V_Net/promise12_vnet_pytorch-master/DataManager.py", line 54, in loadImages
    self.meanIntensityTrain=m/len(self.sitkImages)
ZeroDivisionError: float division by zero
""",
        FailureClass.DATA_ERROR,
        "traceback.empty_collection",
    ),
    (
        "eriklindernoren/PyTorch-YOLOv3#26",  # the model code divides by the count of boxes: its own missing guard
        """
Traceback (most recent call last):
  File "train.py", line 82, in <module>
    loss = model(imgs, targets)
  File "/home/alupotto/PycharmProjects/tracktorch/models.py", line 177, in forward
    return loss, loss_x.item(), loss_y.item(), loss_w.item(), loss_h.item(), loss_conf.item(), loss_cls.item(), float(nCorrect/nGT)
ZeroDivisionError: division by zero
""",  # noqa: E501
        FailureClass.CODE_BUG,
        "traceback.user_code_exception",
    ),
    (
        # python/cpython:Lib/multiprocessing/spawn.py: a spawned child (a Windows DataLoader worker) reading its
        # parent's pickled state from a pipe the parent closed; no data file is read
        "python/cpython:Lib/multiprocessing/spawn.py",
        r"""
Traceback (most recent call last):
File "<string>", line 1, in <module>
File "multiprocessing\spawn.py", line 105, in spawn_main
    exitcode = _main(fd)
File "multiprocessing\spawn.py", line 115, in _main
    self = reduction.pickle.load(from_parent)
EOFError: Ran out of input
""",
        FailureClass.CODE_BUG,
        "traceback.user_code_exception",
    ),
]


@pytest.mark.parametrize(("source", "text", "cls", "rule"), CASES, ids=[c[0] for c in CASES])
def test_a_real_traceback_gets_its_class(source: str, text: str, cls: FailureClass, rule: str) -> None:
    verdict = judge(traceback_from(text))
    assert (verdict.failure_class, verdict.rule_id) == (cls, rule), verdict.reason
