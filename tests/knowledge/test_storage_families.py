"""Storage families of knowledge/signatures/storage.yaml, through the whole triage.

Each case is raw lines real programs print (the thread in the comment) with the class they must come out as,
beside what competes with them there: the traceback a torch.load or h5py error ends, a SCSI driver's lines, a
read-only error of the process that follows the kernel's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.api import triage
from crashcart.knowledge.taxonomy import FailureClass

STORAGE = FailureClass.STORAGE

CASES = [
    (  # MichaIng/DietPi#4499: the block layer fails writes to a disk that then drops off the bus
        "block_layer_write_errors",
        [
            "[  407.147725] blk_update_request: I/O error, dev sda, sector 6192120 op 0x1:(WRITE) flags 0x100000"
            " phys_seg 3 prio class 0",
            "[  407.147766] sd 1:0:0:0: [sda] tag#14 UNKNOWN(0x2003) Result: hostbyte=0x00 driverbyte=0x06 cmd_age=30s",
            "[  407.147783] blk_update_request: I/O error, dev sda, sector 705106264 op 0x1:(WRITE) flags 0x100000"
            " phys_seg 1 prio class 0",
            "[  407.148452] usb 2-2: USB disconnect, device number 3",
        ],
        STORAGE,
    ),
    (  # Seagate/cortx-hare#852: ext4 aborts its journal and goes read-only; the next mkdir fails
        "ext4_remounted_read_only",
        [
            "[15163.781798] EXT4-fs (dm-25): previous I/O error to superblock detected",
            "[15163.781999] EXT4-fs error (device dm-25): ext4_journal_check_start:56: Detected aborted journal",
            "[15163.782042] EXT4-fs (dm-25): Remounting filesystem read-only",
            "mkdir: cannot create directory '/var/mero/hax': Read-only file system",
        ],
        STORAGE,
    ),
    (  # YuvalNirkin/fsgan#18: torch.load of a legacy-format checkpoint that ends early, a bare RuntimeError
        "legacy_checkpoint_unexpected_eof",
        [
            "Traceback (most recent call last):",
            '  File "/home/hsl/Project/Face-swap/fsgan/fsgan/utils/utils.py", line 166, in load_model',
            "    checkpoint = torch.load(model_path, map_location=lambda storage, loc: storage)",
            '  File "/home/hsl/anaconda3/lib/python3.6/site-packages/torch/serialization.py", line 368, in load',
            "    return _load(f, map_location, pickle_module)",
            '  File "/home/hsl/anaconda3/lib/python3.6/site-packages/torch/serialization.py", line 549, in _load',
            "    deserialized_objects[key]._set_from_file(f, offset, f_should_read_directly)",
            "RuntimeError: unexpected EOF, expected 1880922 more bytes. The file might be corrupted.",
        ],
        STORAGE,
    ),
    (  # lyogavin/airllm#137: a partly downloaded safetensors shard
        "safetensors_header_incomplete",
        ["safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer"],
        STORAGE,
    ),
    (  # h5py/h5py#1082: HDF5 locks the file it creates on an NFS mount without a lock manager
        "hdf5_lock_on_nfs",
        [
            '  File "h5py/h5f.pyx", line 98, in h5py.h5f.create',
            "OSError: Unable to create file (unable to lock file, errno = 37, error message = 'No locks available')",
        ],
        STORAGE,
    ),
    (  # huggingface/safetensors:safetensors/src/tensor.rs: what safetensors 0.8.0 raised for a file cut in half
        "safetensors_incomplete_metadata",
        [
            "Traceback (most recent call last):",
            '  File "<string>", line 5, in <module>',
            '  File "/tmp/pkgs-memdata/x/safetensors/numpy.py", line 150, in load_file',
            '    with safe_open(filename, framework="np", backend=backend) as f:',
            "         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            "safetensors._safetensors_rust.SafetensorError: Error while deserializing header: incomplete metadata, file"
            " not fully covered",
        ],
        STORAGE,
    ),
    (  # boto/botocore:botocore/exceptions.py: IncompleteReadError's format, the object's body ended early
        "botocore_incomplete_read",
        ["botocore.exceptions.IncompleteReadError: 1048576 read, but total bytes expected is 4194304."],
        STORAGE,
    ),
    (  # fsspec/gcsfs:gcsfs/retry.py: retry_request's logger.exception after the last retry, then the raise
        "gcsfs_out_of_retries",
        [
            "_request out of retries on exception: Service Unavailable, 503",
            "gcsfs.retry.HttpError: Service Unavailable, 503",
        ],
        STORAGE,
    ),
    (  # deepspeedai/DeepSpeed:csrc/aio/common/deepspeed_aio_common.cpp: report_file_error's format (NVMe offload)
        "deepspeed_aio_open_failed",
        [
            "deepspeed_aio:   open for write  failed on /local_nvme/zero_stage_3/fp16params/rank0/0_param.tensor.swp"
            " error = 22"
        ],
        STORAGE,
    ),
    (  # huggingface/datasets:src/datasets/builder.py: the cache disk check before a build (the source's format)
        "datasets_not_enough_disk_space",
        ["OSError: Not enough disk space. Needed: 3.45 GiB (download: 1.20 GiB, generated: 2.25 GiB"],
        STORAGE,
    ),
    (  # thewh1teagle/vibe#1168: Windows' ERROR_DISK_FULL as Rust's io::Error prints it
        "windows_disk_full_112",
        [
            "Error: All model downloads failed. Last error: Error while writing to file"
            " C:\\Users\\BhuvanaDChandar\\AppData\\Local\\github.com.thewh1teagle.vibe\\ggml-model_bcga8ob9.bin",
            "",
            "Caused by:",
            "    There is not enough space on the disk. (os error 112)",
        ],
        STORAGE,
    ),
    (  # pymedusa/Medusa#1055: SQLite's SQLITE_FULL through the sqlite3 module
        "sqlite_database_or_disk_full",
        [
            'Sep 09 05:11:31 SHANADOA python[5456]: cache_db_con.action("VACUUM")',
            "Sep 09 05:11:31 SHANADOA python[5456]: sqlite3.OperationalError: database or disk is full",
        ],
        STORAGE,
    ),
    (  # whamcloud/integrated-manager-for-lustre#230: ESHUTDOWN, the Lustre connection shut down
        "lustre_transport_endpoint_shutdown",
        ["*mount.lustre: mount /dev/sdb at /mnt/testfs-OST0001 failed: Cannot send after transport endpoint shutdown*"],
        STORAGE,
    ),
    (  # Azure/azure-sdk-for-python#20447: the Azure Storage SDK's write to the blob endpoint timing out
        "azure_blob_service_response_error",
        [
            "--> 298             raise error",
            "ServiceResponseError: ('Connection aborted.', timeout('The write operation timed out'))",
        ],
        STORAGE,
    ),
    (  # coreylynch/grid-lstm#5: torch7 writes a checkpoint and fewer blocks reach the file than it wrote
        "torch7_checkpoint_short_write",
        [
            "saving checkpoint to cv/lm_lstm_epoch0.10_1.2833.t7\t",
            "/home/____/torch/install/bin/luajit: /home/____/torch/install/share/lua/5.1/torch/File.lua:210: write"
            " error: wrote 39776036 blocks instead of 41251350 at"
            " /tmp/luarocks_torch-scm-1-1419/torch7/lib/TH/THDiskFile.c:340",
            "stack traceback:",
            "\t[C]: in function 'write'",
        ],
        STORAGE,
    ),
    (  # airbnb/streamalert#766: urllib3's read timeout on the S3 endpoint, raised bare through botocore's vendored copy
        "s3_urllib3_read_timeout",
        [
            "Traceback (most recent call last):",
            'File "/var/runtime/botocore/response.py", line 74, in read',
            "chunk = self._raw_stream.read(amt)",
            'File "/var/runtime/botocore/vendored/requests/packages/urllib3/response.py", line 267, in read',
            "raise ReadTimeoutError(self._pool, None, 'Read timed out.')",
            "ReadTimeoutError: HTTPSConnectionPool(host='s3.amazonaws.com', port=443): Read timed out.",
        ],
        STORAGE,
    ),
]


@pytest.mark.parametrize(("name", "lines", "expected"), CASES, ids=[c[0] for c in CASES])
def test_family_decides_the_class(tmp_path: Path, name: str, lines: list[str], expected: FailureClass) -> None:
    log = tmp_path / f"{name}.log"
    log.write_text("\n".join(lines) + "\n")
    assert triage(log, workers=1).diagnosis.failure_class is expected


def test_a_flash_partitions_boot_error_is_no_disk_failure(tmp_path: Path) -> None:
    """coolsnowwolf/lede#119: routers and VMs log it for a device no job writes to."""
    log = tmp_path / "router_boot.log"
    log.write_text("blk_update_request: I/O error, dev mtdblock1, sector 0\n")
    assert triage(log, workers=1).diagnosis.failure_class is not STORAGE


def test_gcsfs_retrying_is_no_storage_failure(tmp_path: Path) -> None:
    """fsspec/gcsfs:gcsfs/retry.py logs each retry at DEBUG; the next attempt may well succeed."""
    log = tmp_path / "gcsfs_retry.log"
    log.write_text("_request retrying after exception: Service Unavailable, 503\n")
    assert triage(log, workers=1).diagnosis.failure_class is not STORAGE
