"""What the commands print: text, Markdown, JSON, JUnit XML, SARIF, annotations, from plain data."""
