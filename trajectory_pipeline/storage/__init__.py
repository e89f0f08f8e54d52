"""Where the pipeline's files live: a local folder, or an object store named by an fsspec URL
(`objects.py`), read and written through a private local cache."""
