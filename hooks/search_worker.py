"""MkDocs hook: mend a bug in lunr, the search library inside Material's search worker, in the built copy.

lunr minimises the set of indexed words by comparing each node's `TokenSet.toString`, which writes an edge's
letter and its target's number side by side. When words hold digits, two different nodes can write the same
string ("1" + "23" + "4" + "5" reads like "1" + "2" + "3" + "45"), lunr merges them, and a query then expands
to a word the index does not hold: the search fails with "Invalid query" and shows nothing (on this site,
a search for `kubelet`). A comma after each number makes the strings unambiguous: nodes are merged only when
they accept the same words, so every search the bug did not break finds what it found before. lunr 2.3.9
(2020) is its last release; lunr.js issue 503, words with digits that an index does not find, looks like
the same flaw from the other side.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.exceptions import PluginError

AMBIGUOUS = 'e=e+s+o.id}return e}'  # the end of TokenSet.prototype.toString as Material's worker bundle has it
MENDED = 'e=e+s+o.id+","}return e}'


def on_post_build(config):
    workers = sorted(Path(config["site_dir"], "assets", "javascripts", "workers").glob("search.*.min.js"))
    if not workers:
        return  # no search on this site
    for worker in workers:
        text = worker.read_text(encoding="utf-8")
        if MENDED in text:
            continue  # a dirty build kept the mended copy
        if text.count(AMBIGUOUS) != 1:
            raise PluginError(f"hooks/search_worker.py: {worker.name} no longer holds lunr's TokenSet.toString as "
                              "this hook knows it: check whether the new Material still needs the mend")
        worker.write_text(text.replace(AMBIGUOUS, MENDED), encoding="utf-8")
