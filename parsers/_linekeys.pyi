def keys(block: bytes, /) -> bytes:
    """The block with every run of hex characters that holds a digit made one '0', carriage returns dropped."""
