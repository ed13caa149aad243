"""Artifact formats (architecture.md §2): one module per file format, holding its model, writer and reader, used
by the stage that writes the file and by every stage that reads it."""
