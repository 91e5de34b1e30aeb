def mask(text: str, /) -> str:
    """The line with numbers, hex, IPs, paths, hostnames and ranks replaced by <NUM>, <HEX>, <IP>, <PATH>,
    <HOST> and <RANK>."""
