"""Running Paddle's own Python test files on Rill, one process per file, and reporting them:
what run_op_tests.py (Paddle 2.1's op tests) and run_fluid014_tests.py (Fluid 0.14's tests)
share.

Each file runs in a process of its own with the stand-in `paddle` package and OpTest of
standin/ first on the path (Rill's rill.fluid underneath), then the file's own directory
for its helpers, in an empty directory of its own. A Python 2 file (Fluid 0.14's) is converted to Python 3 with lib2to3 as it
is imported, and so is each module it imports from its directory; nothing is written beside
Paddle's files. The process prints one result per test method as JSON on its last line.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# Runs one test file's methods (argv: module name, "py2" or "py3", the file's directory),
# one result line per method, as JSON, on stdout's last line.
_PROCESS = r"""
import ast, importlib.abc, importlib.util, json, os, runpy, sys, traceback, unittest, warnings
sys.path[:] = [p for p in sys.path if p not in ("", ".")]  # the stand-in's op_test, not the one in cwd
name, dialect, here = sys.argv[1], sys.argv[2], sys.argv[3]
results = []

if dialect == "py2":
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
    from lib2to3 import refactor
    # fix_import would make `import op_test` relative; these modules are imported top-level.
    fixers = [f for f in refactor.get_fixers_from_package("lib2to3.fixes") if not f.endswith(".fix_import")]
    tool = refactor.RefactoringTool(fixers)
    # A module that defines __next__ already (one written for both Pythons) keeps its next():
    # fix_next would make it a second __next__ calling itself.
    tool_keeping_next = refactor.RefactoringTool([f for f in fixers if not f.endswith(".fix_next")])

    class Py2Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        # Modules of the test's own directory, converted to Python 3 as they are imported.
        def find_spec(self, fullname, path, target=None):
            if "." in fullname or fullname == "op_test":  # OpTest is the stand-in's
                return None
            source = os.path.join(here, fullname + ".py")
            if not os.path.exists(source):
                return None
            return importlib.util.spec_from_loader(fullname, self, origin=source)

        def create_module(self, spec):
            return None

        def source_tree(self, fullname):
            # The module's source, converted: lib2to3's fixers, then Python 2's division.
            origin = os.path.join(here, fullname + ".py")
            with open(origin) as f:
                text = f.read()
            converter = tool_keeping_next if "def __next__" in text else tool
            code = str(converter.refactor_string(text + ("" if text.endswith("\n") else "\n"), fullname))
            tree = ast.parse(code, origin)
            return ast.fix_missing_locations(Py2Semantics("from __future__ import division" not in text).visit(tree))

        def exec_module(self, module):
            module.__file__ = module.__spec__.origin
            exec(compile(self.source_tree(module.__name__), module.__spec__.origin, "exec"), module.__dict__)

    class Py2Semantics(ast.NodeTransformer):
        # Python 2's `/` floors when both operands are ints (unless the module imports
        # division from __future__): a / b becomes _py2_div(a, b). Its exceptions had
        # `message` (their one argument): e.message of an exception an `except ... as e`
        # caught becomes str(e).
        def __init__(self, floor_division):
            self.floor_division = floor_division
            self.caught = set()

        def visit_ExceptHandler(self, node):
            if node.name:
                self.caught.add(node.name)
            self.generic_visit(node)
            return node

        def visit_Attribute(self, node):
            self.generic_visit(node)
            if node.attr == "message" and isinstance(node.value, ast.Name) and node.value.id in self.caught and \
                    isinstance(node.ctx, ast.Load):
                return ast.copy_location(ast.Call(ast.Name("str", ast.Load()), [node.value], []), node)
            return node

        def visit_BinOp(self, node):
            self.generic_visit(node)
            if self.floor_division and isinstance(node.op, ast.Div):
                return ast.copy_location(ast.Call(ast.Name("_py2_div", ast.Load()), [node.left, node.right], []), node)
            return node

        def visit_AugAssign(self, node):
            self.generic_visit(node)
            if self.floor_division and isinstance(node.op, ast.Div):
                target = ast.Name(node.target.id, ast.Load()) if isinstance(node.target, ast.Name) else None
                if target is not None:
                    return ast.copy_location(ast.Assign([node.target], ast.Call(ast.Name("_py2_div", ast.Load()),
                                                                               [target, node.value], [])), node)
            return node

    def _py2_div(a, b):
        return a // b if isinstance(a, int) and isinstance(b, int) else a / b
    import builtins
    builtins._py2_div = _py2_div

    sys.meta_path.insert(0, Py2Finder())

    # Python 2's unittest named assertRaises' callable `callableObj`.
    _assert_raises = unittest.TestCase.assertRaises

    def assert_raises(self, expected, *args, **kwargs):
        if "callableObj" in kwargs:
            args = (kwargs.pop("callableObj"),) + args
        return _assert_raises(self, expected, *args, **kwargs)
    unittest.TestCase.assertRaises = assert_raises


class Result(unittest.TestResult):
    def addSuccess(self, test):
        results.append((test.id(), "pass", ""))
    def addFailure(self, test, err):
        results.append((test.id(), "fail", self._exc_info_to_string(err, test)))
    def addError(self, test, err):
        if isinstance(test, unittest.suite._ErrorHolder):
            results.append((test.description, "fail", self._exc_info_to_string(err, test)))
        else:
            results.append((test.id(), "fail", self._exc_info_to_string(err, test)))
    def addSkip(self, test, reason):
        results.append((test.id(), "skip", reason))
        # A test skipped partway (at a name the stand-in lacks) may leave the dynamic graph
        # mode it entered; its own enable_static would have left it.
        paddle = sys.modules.get("paddle")
        if paddle is not None and hasattr(paddle, "enable_static"):
            paddle.enable_static()
    def addExpectedFailure(self, test, err):
        results.append((test.id(), "pass", ""))
    def addUnexpectedSuccess(self, test):
        results.append((test.id(), "fail", "unexpected success"))

try:
    module = __import__(name)
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    if suite.countTestCases() == 0 and hasattr(module, "main"):
        # A script without test methods (the book's high-level-api chapters) is run as its
        # build ran it, as __main__: one result, a pass when it ends without an exception.
        try:
            if dialect == "py2":
                exec(compile(Py2Finder().source_tree(name), name, "exec"), {"__name__": "__main__"})
            else:
                runpy.run_module(name, run_name="__main__")
            results.append((name + ".__main__", "pass", ""))
        except unittest.SkipTest as skip:
            results.append((name + ".__main__", "skip", str(skip)))
        except BaseException:
            results.append((name + ".__main__", "fail", traceback.format_exc()))
    suite.run(Result())
except unittest.SkipTest as skip:  # the module itself skips (it reaches for a skipped API as it loads)
    results.append((name, "skip", str(skip)))
except SystemExit as done:  # a script whose exit status is its verdict (test_error_clip)
    results.append((name, "fail" if done.code else "pass", "" if not done.code else "exit(%s)" % done.code))
except Exception:
    results.append((name, "fail", "cannot import: " + traceback.format_exc()))
print("\n" + json.dumps(results))
"""


def parse_args(description, files_help):
    """The runners' command line: test files, --build, --json, --timeout, --verbose."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("files", nargs="*", help=files_help)
    parser.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"), help="Rill's build directory")
    parser.add_argument("--json", help="also write every method's result to FILE")
    parser.add_argument("--timeout", type=int, default=600, help="seconds a file may run")
    parser.add_argument("--verbose", action="store_true", help="print failures in full")
    return parser.parse_args()


def skip_kind(reason):
    """The reason group of a skip: GPU, fp16, bf16, complex, LoD, an API group (the stand-in's
    own: "API dygraph", "API 2.x", "API fluid", "API internals"), or the test's own reason."""
    r = reason.lower()
    if r.startswith("api"):
        return reason.split(":")[0]
    for kind in ("fp16", "bf16", "complex", "lod"):
        if r.startswith(kind + ":"):
            return {"lod": "LoD"}.get(kind, kind)
    if any(w in r for w in ("cuda", "gpu", "cudnn", "xpu", "npu", "rocm")):
        return "GPU"
    if "float16" in r or "fp16" in r:
        return "fp16"
    if "bfloat16" in r or "bf16" in r or "mkldnn" in r:
        return "bf16"
    return "other: " + reason.strip().splitlines()[0][:100]


def run_file(path, build, timeout, dialect="py3"):
    """[(test id, "pass" | "fail" | "skip", message)] of the test file at `path`."""
    directory = os.path.dirname(path)
    env = dict(os.environ)
    env.pop("RILL_PLUGIN_PATH", None)
    path_dirs = [os.path.join(HERE, "standin"), os.path.join(build, "python"), directory]
    if os.path.basename(os.path.dirname(directory)) == "unittests":  # sequence/...: its helpers are one up
        path_dirs.append(os.path.dirname(directory))
    env["PYTHONPATH"] = os.pathsep.join(path_dirs)
    module = os.path.basename(path)[:-3]
    # What a test writes where it runs (saved models) goes to a directory of its own.
    with tempfile.TemporaryDirectory(prefix="rill-paddle-test-") as cwd:
        try:
            r = subprocess.run([sys.executable, "-c", _PROCESS, module, dialect, directory], cwd=cwd, env=env,
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return [(module, "fail", "timed out after %d s" % timeout)]
    lines = r.stdout.strip().splitlines()
    try:
        return [tuple(x) for x in json.loads(lines[-1])]
    except (IndexError, ValueError):
        return [(module, "fail", "the test process exited %d: %s" % (r.returncode, r.stderr.strip()[-2000:]))]


def run_and_report(paths, build, timeout, verbose, json_path, dialect="py3", divergences=None):
    """Runs each test file of `paths` ({shown name: path}), printing each file's passed,
    failed and skipped methods, each failure's first line (verbose: all of it), the skips
    by reason, and the totals; writes every result to `json_path` if given. A method of
    `divergences` ({test id: why}) that fails is counted apart, with its reason: a contract
    where Rill deliberately differs from these tests (the two Paddle versions disagree, or
    the test asserts what only a GPU run writes); one that passes counts as passed. Returns
    the number of failed methods not listed there (a missing or unimportable file counts as
    one)."""
    divergences = divergences or {}
    totals = collections.Counter()
    skips = collections.Counter()
    every = {}
    for name, path in paths.items():
        if not os.path.exists(path):
            print("%-45s missing: %s" % (name, path))
            totals["fail"] += 1
            continue
        results = [(test, "diverges", divergences[test]) if outcome == "fail" and test in divergences
                   else (test, outcome, message) for test, outcome, message in run_file(path, build, timeout, dialect)]
        every[name] = results
        counts = collections.Counter(outcome for _, outcome, _ in results)
        totals.update(counts)
        print("%-45s %3d passed %3d failed %3d skipped" % (name, counts["pass"], counts["fail"], counts["skip"]) +
              ("  %d diverge" % counts["diverges"] if counts["diverges"] else ""))
        for test, outcome, message in results:
            if outcome == "fail":
                text = message.strip()
                if not verbose:
                    text = [l for l in text.splitlines() if l.strip()][-1][:300] if text else ""
                print("    FAIL %s: %s" % (test, text))
            elif outcome == "skip":
                skips[skip_kind(message)] += 1
            elif outcome == "diverges":
                print("    DIVERGES %s: %s" % (test, message))
    run = totals["pass"] + totals["fail"] + totals["diverges"]
    print("\nskipped, by reason:")
    for kind, n in skips.most_common():
        print("  %5d  %s" % (n, kind))
    print("\ntotal: %d passed, %d failed (%.1f%% of %d run), %d skipped, %d diverge (listed), %d files" %
          (totals["pass"], totals["fail"], 100.0 * totals["pass"] / max(1, run), run, totals["skip"],
           totals["diverges"], len(paths)))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(every, f, indent=1)
    return totals["fail"]
