"""The HTML report: one self-contained file (inline CSS and SVG, no script, nothing fetched) for a job or a batch."""
