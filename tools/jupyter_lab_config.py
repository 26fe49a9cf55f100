"""JupyterLab's settings for `make lab`: the lab sources in labs/src/, which hold the solutions, left out of its file browser."""

c = get_config()  # noqa: F821 (defined by Jupyter when it loads this file)
c.ContentsManager.hide_globs.append("src")  # appended: the default patterns (__pycache__, *.pyc, ...) stay hidden
