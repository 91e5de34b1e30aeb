"""Data families of knowledge/signatures/data.yaml, through the whole triage.

Each case is raw lines real programs print (the thread in the comment) with the class they must come out as,
beside what competes with them there: the reader's traceback frames, the raising source line, TensorFlow's
multi-error framing, a decoder's warning that is no failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.api import triage
from crashcart.knowledge.taxonomy import FailureClass

DATA = FailureClass.DATA_ERROR

CASES = [
    (  # matterport/Mask_RCNN#1439: pycocotools' createIndex on an annotation without an 'id', as IPython prints it
        "coco_annotation_without_an_id",
        [
            "c:\\programdata\\anaconda3\\envs\\mask-rcnn\\lib\\site-packages\\pycocotools\\coco.py"
            " in createIndex(self)",
            "     97             for ann in self.dataset['annotations']:",
            "     98                 imgToAnns[ann['image_id']].append(ann)",
            "---> 99                 anns[ann['id']] = ann",
            "    100 ",
            "    101         if 'images' in self.dataset:",
            "",
            "KeyError: 'id'",
        ],
        DATA,
    ),
    (  # longcw/yolo2-pytorch#126: numpy's max over an empty annotation's boxes; removing empty annotations fixed it
        "max_over_an_empty_annotation",
        ["ValueError: zero-size array to reduction operation maximum which has no identity"],
        DATA,
    ),
    (  # upura/deep.learning.diabetic.retinopathy#1: cv2.resize on the None imread returned, in OpenCV 3.x's words
        "opencv_resize_of_an_image_that_did_not_load",
        [
            "Traceback (most recent call last):",
            '  File "main.py", line 35, in <module>',
            "    img = cv2.resize(img, (IMG_SIZE, IMG_SIZE))",
            "cv2.error: /io/opencv/modules/imgproc/src/resize.cpp:4044: error: (-215) ssize.width > 0"
            " && ssize.height > 0 in function resize",
        ],
        DATA,
    ),
    (  # pytorch/vision#707: torchvision before 0.8 on an ImageFolder root whose class folders hold no image
        "imagefolder_with_no_image_in_its_subfolders",
        [
            '  File "/anaconda3/lib/python3.6/site-packages/torchvision/datasets/folder.py", line 79, in __init__',
            '    "Supported extensions are: " + ",".join(extensions)))',
            "RuntimeError: Found 0 files in subfolders of: /Users/administer/Desktop/D-HAZY_DATASET1/Middlebury_Hazy",
            "Supported extensions are: .jpg,.jpeg,.png,.ppm,.bmp,.pgm,.tif",
        ],
        DATA,
    ),
    (  # shahrukhqasim/TIES-2.0#47: TFRecords from another generator, under TensorFlow's multi-error framing
        "tfrecord_example_that_does_not_parse",
        [
            "2021-03-19 05:40:04.139370: W tensorflow/core/framework/op_kernel.cc:1502] OP_REQUIRES failed at"
            " example_parsing_ops.cc:240 : Invalid argument: Key: global_features.  Can't parse serialized Example.",
            "Traceback (most recent call last):",
            '  File "/lib/python3.7/site-packages/tensorflow/python/client/session.py", line 1356, in _do_call',
            "    return fn(*args)",
            "tensorflow.python.framework.errors_impl.InvalidArgumentError: 2 root error(s) found.",
            "  (0) Invalid argument: Key: global_features.  Can't parse serialized Example.",
            "         [[{{node ParseSingleExample/ParseSingleExample}}]]",
        ],
        DATA,
    ),
    (  # omoindrot/tensorflow-triplet-loss#24: a feature the parse spec requires is not in the records
        "tfrecord_without_a_required_feature",
        ["InvalidArgumentError: Feature: img_raw (data type: string) is required but could not be found."],
        DATA,
    ),
    (  # mosaicml/streaming#677: the MDS reader seeking past its shard, under rank prefixes and the reader's frames
        "mds_sample_past_its_shard",
        [
            '[rank5]:   File "/home/ubuntu/xxx/.venv/lib/python3.10/site-packages/streaming/base/format/mds/reader.py",'
            " line 145, in get_sample_data",
            "[rank5]:     raise IndexError(",
            "[rank5]: IndexError: Relative sample index 5205 is not present in the shard.01000.mds file.",
        ],
        DATA,
    ),
    (  # ispamm/MHyEEG#2: a TSV row with more fields than the header, under the preprocessing script's frames
        "csv_row_with_extra_fields",
        [
            "Traceback (most recent call last):",
            '  File "D:\\Codes\\MHyEEG-main\\data\\preprocessing.py", line 252, in <module>',
            "    preprocess(sessions_dir, args.save_path, args.verbose)",
            '  File "D:\\Codes\\MHyEEG-main\\data\\preprocessing.py", line 125, in preprocess',
            "    gaze_df = pd.read_csv(gaze_file, sep='\\t', skiprows=23)",
            '  File "D:\\anaconda3\\envs\\pytorch_thesis\\lib\\site-packages\\pandas\\io\\parsers\\readers.py",'
            " line 948, in read_csv",
            "    return _read(filepath_or_buffer, kwds)",
            "pandas.errors.ParserError: Error tokenizing data. C error: Expected 44 fields in line 3169, saw 56",
        ],
        DATA,
    ),
    (  # sjteresi/TE_Density#149: an HDF5 file left half-written, in HDF5 1.12+'s wording
        "hdf5_truncated_synchronously",
        [
            '  File "h5py/h5f.pyx", line 102, in h5py.h5f.open',
            "OSError: Unable to synchronously open file (truncated file: eof = 96, sblock->base_addr = 0, stored_eof ="
            " 2048)",
        ],
        DATA,
    ),
    (  # epic-kitchens/epic-kitchens-download-scripts#23: ffmpeg on a video that was not fully downloaded
        "mp4_without_moov_atom",
        [
            "[mov,mp4,m4a,3gp,3g2,mj2 @ 0x560f45cf95c0] moov atom not found",
            "P37/P37_102.MP4: Invalid data found when processing input",
        ],
        DATA,
    ),
    (  # Bartzi/stn-ocr#13: a TFRecord shard that ends mid-record
        "tfrecord_truncated",
        ["tensorflow.python.framework.errors_impl.DataLossError: truncated record at 285474855"],
        DATA,
    ),
    (  # google-research/uda#47: the same in TF 1.15's framing of several errors at once
        "tfrecord_truncated_multi_error",
        [
            "ERROR:tensorflow:Error recorded from training_loop: 2 root error(s) found.",
            "  (0) Data loss: truncated record at 49210074",
            "         [[node IteratorGetNext (defined at main.py:544) ]]",
            "         [[IteratorGetNext/_1677]]",
            "  (1) Data loss: truncated record at 49210074",
            "         [[node IteratorGetNext (defined at main.py:544) ]]",
            "0 successful operations.",
            "0 derived errors ignored.",
        ],
        DATA,
    ),
    (  # TobiasSunderdiek/cartoon-gan#9: torchvision's ImageFolder found a class folder with no image in it
        "image_folder_class_without_files",
        [
            "[/usr/local/lib/python3.7/dist-packages/torchvision/datasets/folder.py](https://localhost:8080/#) in"
            " make_dataset(directory, class_to_idx, extensions, is_valid_file)",
            "--> 103         raise FileNotFoundError(msg)",
            "FileNotFoundError: Found no valid file for the classes 1. Supported extensions are: .jpg, .jpeg, .png,"
            " .ppm, .bmp, .pgm, .tif, .tiff, .webp",
        ],
        DATA,
    ),
    (  # huggingface/datasets#3051: the downloaded source files are not the ones the dataset recorded
        "datasets_checksum_mismatch",
        [
            "datasets.utils.info_utils.NonMatchingChecksumError: Checksums didn't match for dataset source files:",
            "['https://github.com/RevanthRameshkumar/CRD3/archive/master.zip']",
        ],
        DATA,
    ),
    (  # apache/arrow:cpp/src/parquet/file_reader.cc: what pyarrow 26.0.1 raised for a Parquet file without its footer
        "parquet_no_footer",
        [
            "Traceback (most recent call last):",
            '  File "<string>", line 3, in <module>',
            '  File "pyarrow/_dataset.pyx", line 1479, in pyarrow._dataset.Fragment.physical_schema.__get__',
            '  File "pyarrow/error.pxi", line 155, in pyarrow.lib.pyarrow_internal_check_status',
            '  File "pyarrow/error.pxi", line 92, in pyarrow.lib.check_status',
            "pyarrow.lib.ArrowInvalid: Could not open Parquet input source '/tmp/pkgs-memdata/bad.parquet': Parquet"
            " magic bytes not found in footer. Either the file is corrupted or this is not a parquet file.",
        ],
        DATA,
    ),
    (  # apache/arrow:cpp/src/arrow/ipc/message.cc: pyarrow 26.0.1 reading an Arrow stream cut in a batch's body
        "arrow_ipc_truncated_body",
        [
            "Traceback (most recent call last):",
            '  File "<string>", line 3, in <module>',
            '  File "pyarrow/ipc.pxi", line 848, in pyarrow.lib.RecordBatchReader.read_all',
            '  File "pyarrow/error.pxi", line 92, in pyarrow.lib.check_status',
            "OSError: Expected to be able to read 8000 bytes for message body, got 3868",
        ],
        DATA,
    ),
    (  # huggingface/datasets:src/datasets/data_files.py: EmptyDatasetError's format
        "datasets_empty_directory",
        ["datasets.data_files.EmptyDatasetError: The directory at /data/corpus/train doesn't contain any data files"],
        DATA,
    ),
    (  # webdataset/webdataset:webdataset/shardlists.py: a stage declared non-empty that saw no sample
        "webdataset_no_data",
        ["ValueError: pipeline stage received no data at all and this was declared as an error"],
        DATA,
    ),
    (  # huggingface/datasets:src/datasets/utils/info_utils.py: verify_splits' missing split
        "datasets_expected_more_splits",
        ["datasets.exceptions.ExpectedMoreSplitsError: {'validation'}"],
        DATA,
    ),
    (  # python-pillow/Pillow:src/PIL/ImageFile.py: what Pillow 13.0.0 raised for a JPEG cut in its header
        "pillow_truncated_file_read",
        ["OSError: Truncated File Read"],
        DATA,
    ),
    (  # python-pillow/Pillow:src/_webp.c: what Pillow 13.0.0 raised for a WebP cut in half
        "pillow_webp_no_decoder",
        ["OSError: could not create decoder object"],
        DATA,
    ),
    (  # h5py/h5py:h5py/_selector.pyx: h5py 3.16.0 reading a gzip chunk whose bytes were overwritten
        "hdf5_filter_failure",
        [
            "Traceback (most recent call last):",
            '  File "<string>", line 3, in <module>',
            '  File "h5py/_objects.pyx", line 54, in h5py._objects.with_phil.wrapper',
            '  File "h5py/_objects.pyx", line 55, in h5py._objects.with_phil.wrapper',
            '  File "/tmp/pkgs-memdata/x/h5py/_hl/dataset.py", line 872, in __getitem__',
            "    return self._fast_reader.read(args)",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            '  File "h5py/_selector.pyx", line 393, in h5py._selector.Reader.read',
            "OSError: Can't synchronously read data (filter returned failure during read)",
        ],
        DATA,
    ),
    (  # python/cpython:Modules/_pickle.c: CPython 3.11.7's pickle.load on an HTML page saved as the .pkl
        "pickle_not_a_pickle",
        ["_pickle.UnpicklingError: invalid load key, '<'."],
        DATA,
    ),
    (  # bastibe/python-soundfile:soundfile.py: soundfile before 0.11 raised libsndfile's text as RuntimeError
        "soundfile_runtime_error_unimplemented",
        [
            "RuntimeError: Error opening '/data/librispeech/train-clean-100/103/1240/103-1240-0000.flac': File"
            " contains data in an unimplemented format.",
        ],
        DATA,
    ),
    (  # webdataset/webdataset:webdataset/filters.py: webdataset 1.0.2 on a shard whose second sample has no .jpg
        "webdataset_sample_missing_field",
        [
            "(b'x', b'1\\n')",
            "Traceback (most recent call last):",
            '  File "<string>", line 4, in <module>',
            '  File "/tmp/pkgs-memdata/x/webdataset/pipeline.py", line 105, in iterator',
            "    for sample in self.iterator1():",
            '  File "/tmp/pkgs-memdata/x/webdataset/filters.py", line 665, in _to_tuple',
            "    if handler(exn):",
            "       ^^^^^^^^^^^^",
            '  File "/tmp/pkgs-memdata/x/webdataset/filters.py", line 147, in reraise_exception',
            "    raise exn",
            '  File "/tmp/pkgs-memdata/x/webdataset/filters.py", line 231, in getfirst',
            '    raise ValueError(f"didn\'t find {keys} in {list(a.keys())}")',
            "ValueError: didn't find ['jpg', 'png'] in ['__key__', '__url__', 'cls', '__local_path__']",
        ],
        DATA,
    ),
    (  # webdataset/webdataset#32: an older webdataset, whose samples list no __url__, on shards never closed
        "webdataset_sample_missing_field_without_url",
        [
            '    raise ValueError(f"didn\'t find {keys} in {list(a.keys())}")',
            "ValueError: didn't find ['y.txt'] in ['__key__', 'x.pyd']",
        ],
        DATA,
    ),
    (  # flashlight/wav2letter#241: every loader thread fails to open its audio sample, glog's fatal lines
        "wav2letter_sndfile_cannot_open",
        [
            "F0319 22:54:32.525249 15292 Sound.cpp:62] sndfile: unknown format or could not open file -"
            " /home/zd/w2l/data/train-clean-100/000000000.flac18",
            "F0319 22:54:32.525315 15300 Sound.cpp:62] sndfile: unknown format or could not open file -"
            " /home/zd/w2l/data/train-clean-100/000004758.flac0",
            "*** Check failure stack trace: ***",
            "    @     0x7f85844abe21  google::LogMessage::SendToLog()",
            "    @     0x7f85844a979d  google::LogMessage::Flush()",
        ],
        DATA,
    ),
    (  # multimodal-art-projection/OmniBench#7: a collapsed mp3 of the dataset, opened from bytes (no file name)
        "soundfile_file_object_not_recognised",
        ["*** soundfile.LibsndfileError: Error opening <_io.BytesIO object at 0x7f47d36310d0>: Format not recognised."],
        DATA,
    ),
    (  # carlini/nn_robust_attacks#51: the MNIST .gz is an HTML page, under the standard library's gzip frames
        "gzip_file_is_an_html_page",
        [
            '  File "/users/btech/ananyag/Desktop/ugp/nn_robust_attacks/setup_mnist.py", line 23, in extract_data',
            "    bytestream.read(16)",
            '  File "/usr/lib/python3.8/gzip.py", line 427, in _read_gzip_header',
            "    raise BadGzipFile('Not a gzipped file (%r)' % magic)",
            "gzip.BadGzipFile: Not a gzipped file (b'<!')",
        ],
        DATA,
    ),
    (  # henzler/neuralmaterial#3: torchvision.io cannot decode images that were not fully downloaded
        "torchvision_unsupported_image",
        [
            '  File "/home/galem/anaconda3/envs/neuralmaterial/lib/python3.8/site-packages/torchvision/io/image.py",'
            " line 211, in decode_image",
            "    output = torch.ops.image.decode_image(input)",
            "RuntimeError: Unsupported image file. Only jpeg and png are currently supported.",
        ],
        DATA,
    ),
    (  # AstarLight/Lets_OCR#73: crnn's lmdb loader skips image after image until the workers exit
        "crnn_corrupted_images",
        [
            "Corrupted image for 5362",
            "    raise RuntimeError('DataLoader worker (pid(s) {}) exited unexpectedly'.format(pids_str))",
            "RuntimeError: DataLoader worker (pid(s) 128326) exited unexpectedly",
            "Corrupted image for 5181",
            "Corrupted image for 6898",
        ],
        DATA,
    ),
    (  # DavidJBianco/Clearcut#2: a user-agent string in a column scikit-learn reads as numbers
        "table_value_not_a_number",
        [
            "#Traceback (most recent call last):",
            '  File "./train_flows_rf.py", line 125, in <module>',
            "    clf.fit(train.drop('class', axis=1), y)",
            '  File "/usr/local/lib/python2.7/dist-packages/sklearn/utils/validation.py", line 527, in check_array',
            "    array = np.asarray(array, dtype=dtype, order=order)",
            '  File "/usr/local/lib/python2.7/dist-packages/numpy/core/numeric.py", line 538, in asarray',
            "    return array(a, dtype, copy=False, order=order)",
            "ValueError: could not convert string to float: Mozilla/5.0 (Windows NT 10.0; WOW64; rv:54.0)"
            " Gecko/20100101 Firefox/54.0",
        ],
        DATA,
    ),
    (  # tensorflow/models#4264: the coordinator's log of DecodeJpeg failing on an image of the records, wrapped
        "tensorflow_decode_jpeg_invalid",
        [
            "INFO:tensorflow:Error reported to Coordinator: <class"
            " 'tensorflow.python.framework.errors_impl.InvalidArgumentError'>,",
            " Invalid JPEG data or crop window, data size 32768",
            "         [[Node: case/cond/cond_jpeg/DecodeJpeg = DecodeJpeg[acceptable_fraction=1, channels=3,"
            ' dct_method="", fancy_u',
        ],
        DATA,
    ),
    (  # open-mmlab/mmaction2#1001: decord finds no video stream in a Kinetics video whose meta data is corrupted
        "decord_no_video_stream",
        [
            "error info : decord._ffi.base.DECORDError: [16:47:59] /io/decord/src/video/video_reader.cc:125: Check"
            " failed: st_nb >= 0 ",
            "                  (-1381258232 vs. 0) ERROR cannot find video stream with wanted index: -1",
        ],
        DATA,
    ),
    (  # jiasenlu/vilbert_beta#59: a downloaded LMDB feature database whose pages are damaged, under the reader
        "lmdb_corrupted_page",
        [
            '  File "/home/vilbert_beta/vilbert/datasets/_image_features_reader.py", line 47, in __init__',
            "    **self._image_ids = pickle.loads(txn.get('keys'.encode()))",
            "lmdb.CorruptedError: mdb_get: MDB_CORRUPTED: Located page was wrong type**",
        ],
        DATA,
    ),
    (  # tomopy/tomopy#235: h5py 2.x's wording of an HDF5 file without its signature
        "hdf5_file_signature_capitalised",
        [
            '  File "h5py/h5f.pyx", line 76, in h5py.h5f.open (/home/ilan/minonda/conda-bld/work/h5py/h5f.c:1942)',
            "IOError: Unable to open file (File signature not found)",
        ],
        DATA,
    ),
    (  # lichengunc/MAttNet#5: a batch with an empty referring expression reaches pack_padded_sequence
        "packed_sequence_empty_sample",
        [
            '  File "/home/amax/miniconda2/lib/python2.7/site-packages/torch/nn/utils/rnn.py", line 54, in'
            " pack_padded_sequence",
            '    raise ValueError("length of all samples has to be greater than 0, "',
            "ValueError: length of all samples has to be greater than 0, but found an element in 'lengths' that is <=0",
        ],
        DATA,
    ),
    (  # fdlm/listening-moods#2: np.load on .npy feature files that are Git LFS pointers
        "numpy_file_is_an_lfs_pointer",
        [
            "Cannot load file containing pickled data when allow_pickle=False",
            "OSError: Failed to interpret file 'data/mcn_msd_big_source.npy' as a pickle",
        ],
        DATA,
    ),
]


@pytest.mark.parametrize(("name", "lines", "expected"), CASES, ids=[c[0] for c in CASES])
def test_family_decides_the_class(tmp_path: Path, name: str, lines: list[str], expected: FailureClass) -> None:
    log = tmp_path / f"{name}.log"
    log.write_text("\n".join(lines) + "\n")
    assert triage(log, workers=1).diagnosis.failure_class is expected


def test_libjpegs_recovered_corruption_is_no_data_error(tmp_path: Path) -> None:
    """apple/turicreate#2528: libjpeg warns, decodes the image anyway, and training goes on."""
    log = tmp_path / "jpeg_warning.log"
    log.write_text(
        "| 5248             | 6m 25s       | 26.25%           |\n"
        "Corrupt JPEG data: 258 extraneous bytes before marker 0xd9\n"
        "| 5312             | 6m 30s       | 26.5%            |\n"
    )
    assert triage(log, workers=1).diagnosis.failure_class is not DATA


def test_pillows_corrupt_exif_warning_is_no_data_error(tmp_path: Path) -> None:
    """Pillow 13.0.0 warns and skips the tag on a cut TIFF (python-pillow/Pillow:src/PIL/TiffImagePlugin.py)."""
    log = tmp_path / "tiff_exif_warning.log"
    log.write_text(
        "/tmp/pkgs-memdata/x/PIL/TiffImagePlugin.py:982: UserWarning: Corrupt EXIF data.  Expecting to read 12 bytes"
        " but only got 6. \n"
        "  warnings.warn(str(msg))\n"
    )
    assert triage(log, workers=1).diagnosis.failure_class is not DATA
