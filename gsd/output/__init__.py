"""What the commands print: text, Markdown, JSON, SARIF and annotations, from plain data."""
