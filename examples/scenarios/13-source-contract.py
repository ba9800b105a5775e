"""Example submissions of 13-source-contract: each scenario is the released notebook with some cells answered the
way a student would (predictions as literals; code with a realistic mistake), and the statuses a correct grader must
give it, written here by hand from what the mistake must cause. See examples/make_submissions.py.

Every status holds at any points: a grading calls engine_flag with all 6 functions (5 fresh points besides the
student's own, all different), among them one the run writes with a random name and a random accumulate_grad.
"""
from __future__ import annotations


def predictions(p: dict) -> dict[str, str]:
    return {
        "ex1-predict": "p1_backward = True\np1_grad = False\np1_tensor_backward = None",
        "ex2-predict": "p2_main_is_installed = False",
    }


CODE = {
    "ex1-produce": (
        "def engine_flag(fn):\n"
        "    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))\n"
        "    for node in ast.walk(tree):\n"
        "        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(\"run_backward\"):\n"
        "            for keyword in node.keywords:\n"
        "                if keyword.arg == \"accumulate_grad\":\n"
        "                    return ast.literal_eval(keyword.value)\n"
        "    return None"),
    "ex2-produce": "def installed_torch():\n    return torch.__version__, torch.version.git_version",
}


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}
    out["ben"] = ("wrong predictions, right code", {
        "ex1-predict": ("p1_backward = False   # backward hands the gradient back, so it would not accumulate\n"
                        "p1_grad = True\np1_tensor_backward = True"),
        "ex2-predict": "p2_main_is_installed = True", **CODE},
        {"1.predict.backward": "failed:backward-returns-the-gradient", "1.predict.grad": "failed:grad-also-writes-grad",
         "1.predict.tensor_backward": "failed:flag-in-tensor-backward", "2.predict.main": "failed:main-is-installed"})

    out["cleo"] = ("searches the text for accumulate_grad=True: False where the source makes no engine call", {
        **predictions(params("cleo")), **CODE,
        "ex1-produce": "def engine_flag(fn):\n    return \"accumulate_grad=True\" in inspect.getsource(fn)"},
        {"1.produce.flag": "failed"})

    out["dev"] = ("the release the chapter quotes, typed in, with main as its revision", {
        **predictions(params("dev")), **CODE,
        "ex2-produce": "def installed_torch():\n    return \"2.13.0\", \"main\"   # what the chapter read"},
        {"2.produce.version": "failed"})

    out["eve"] = ("a hard-coded answer: True for every function", {
        **predictions(params("eve")), **CODE,
        "ex1-produce": "def engine_flag(fn):\n    return True   # backward's flag"},
        {"1.produce.flag": "failed"})

    out["hana"] = ("a table of the answers by function name: None for the function the run writes", {
        **predictions(params("hana")), **CODE,
        "ex1-produce": ("def engine_flag(fn):\n    table = {\"backward\": True, \"grad\": False}   # read once, on "
                        "GitHub\n    return table.get(fn.__name__)")},
        {"1.produce.flag": "failed"})

    out["finn"] = ("calls the function instead of reading its source", {
        **predictions(params("finn")), **CODE,
        "ex1-produce": "def engine_flag(fn):\n    return fn()"},
        {"1.produce.flag": "error"})
    return out
