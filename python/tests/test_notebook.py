"""examples/znskit.ipynb runs end to end (nbclient, the python3 kernel of
this interpreter)."""

import nbformat
from nbclient import NotebookClient


def test_the_example_notebook_runs(repo, tmp_path):
    nb = nbformat.read(repo / "examples" / "znskit.ipynb", as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "Zone Invalid Write" in text
    assert "0 failures" in text
    # the figure was drawn
    assert any("image/png" in o.get("data", {}) for o in outputs)
