def keys(block: bytes, /) -> bytes:
    """The block with every run of hex characters that holds a digit made one '0', carriage returns dropped."""

def tally(
    block: bytes, ranked: bool, max_chars: int, /
) -> tuple[int, list[tuple[bytes, int, int, int, int, int, int, int, int]]]:
    """(lines, one row per distinct key in order of first appearance: key, launcher prefix length, count, first
    line index, its start and end offsets, last line index, its start and end offsets)."""
