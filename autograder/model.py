"""model: the typed answer key: Key, Exercise, Arg, Parameter, Check, the expectation kinds (value, convention,
raises, warns) and their answers, Grading and Limits. Frozen dataclasses with JSON-native fields; the JSON
form of a key is written and read by `keyfile`, and documented there.

May import: stdlib.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Literal, Union

Kind = Literal["predict", "produce"]
Visibility = Literal["public", "hidden"]
Number = Union[int, float]


# ------------------------------------------------------------------------------------------------ limits

def _limit(default: Number, unit: str, help: str) -> Any:
    return field(default=default, metadata={"unit": unit, "help": help})


@dataclass(frozen=True)
class Limits:
    """How long and how big one submission's run may be. Declared once here, with unit, default and help:
    the spec's [grading] table, `--limit NAME=VALUE` and the sandbox all derive from these fields.

    Seconds are wall-clock; MB are 2**20 bytes. Changing a limit changes how a run may behave, never
    what is expected (a key's digest does not cover it).
    """

    submission_timeout: float = _limit(120.0, "s", "wall time of the whole run (its CPU time: 1.5 times this)")
    call_timeout: float = _limit(5.0, "s", "each call of a produce function")
    cell_timeout: float = _limit(20.0, "s", "each notebook cell")
    memory_mb: int = _limit(4096, "MB", "address space of each process of a run")
    processes: int = _limit(128, "", "processes and threads of a run")
    output_mb: int = _limit(64, "MB", "printed output, and any one file the run writes")
    disk_mb: int = _limit(256, "MB", "the run's private writable folder")
    run_memory_mb: int = _limit(4096, "MB", "memory of all the processes of a run together, the files of its "
                                            "private folders included (its cgroup's budget; without a cgroup, "
                                            "their private memory, measured by the worker)")

    OPEN_FILES: ClassVar[int] = 1024   # per process; 128 x 1024 stays far below fs.file-max

    @property
    def wall_seconds(self) -> float:
        """Wall-clock seconds the whole run may take."""
        return float(self.submission_timeout)

    @property
    def cpu_seconds(self) -> int:
        """CPU seconds each process of the run may use (RLIMIT_CPU): 1.5 times the wall limit, plus 10."""
        return int(self.submission_timeout * 1.5) + 10

    @property
    def address_space(self) -> int:
        """Bytes of address space of each process (RLIMIT_AS)."""
        return int(self.memory_mb) * 2**20

    @property
    def file_size(self) -> int:
        """Bytes of any one file the run writes, its captured output included (RLIMIT_FSIZE)."""
        return int(self.output_mb) * 2**20

    @property
    def run_memory_bytes(self) -> int:
        """Bytes of memory all the processes of a run may hold together (sandbox.cgroup; docs/security.md)."""
        return int(self.run_memory_mb) * 2**20

    def step_seconds(self, limit: float) -> float:
        """How long the worker lets one step (a cell, a call) with this alarm `limit` (seconds) run before it
        stops the run: the step's own alarm should have stopped it long before; this catches code that
        ignores, blocks, re-arms or outlasts the alarm (C code that holds the interpreter)."""
        return float(limit) * 1.5 + 2.0

    @property
    def work_bytes(self) -> int:
        """Bytes of the run's private writable folder (a tmpfs, with bwrap)."""
        return int(self.disk_mb) * 2**20

    def with_seconds(self, seconds: float) -> Limits:
        """These limits for a run of `seconds` of wall time (what is left of a submission's limit)."""
        return replace(self, submission_timeout=float(seconds))

    def overridden(self, overrides: dict[str, Number]) -> Limits:
        """These limits with some replaced (`--limit NAME=VALUE`). Raises ValueError for an unknown name or a
        value that is not positive."""
        bad = sorted(set(overrides) - set(LIMIT_NAMES))
        if bad:
            raise ValueError(f"unknown limit(s) {', '.join(bad)}; known: {', '.join(LIMIT_NAMES)}")
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 for v in overrides.values()):
            raise ValueError("limits must be positive numbers")
        return replace(self, **{k: (float(v) if isinstance(getattr(self, k), float) else int(v))
                                for k, v in overrides.items()})


LIMIT_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Limits))


def limits_help() -> str:
    """The limits in words, one per name ("submission_timeout (s, default 120): wall time of ..."), for
    command-line help and error messages."""
    return "; ".join(f"{f.name} ({f.metadata['unit'] + ', ' if f.metadata['unit'] else ''}default {f.default:g}): "
                     f"{f.metadata['help']}" for f in fields(Limits))


@dataclass(frozen=True)
class Tolerance:
    """|observed - expected| <= atol + rtol * |expected|, elementwise; NaN matches only NaN."""

    rtol: float
    atol: float


# Machine epsilon of each floating dtype, the distance from 1.0 to the next number of the dtype (torch.finfo(d).eps on
# torch 2.13.0; tests/fast/test_dtypes.py checks them against the installed torch). A complex dtype's is its parts'.
DTYPE_EPS: dict[str, float] = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23,
                               "float64": 2.0 ** -52, "complex64": 2.0 ** -23, "complex128": 2.0 ** -52}
# The dtypes a produce argument may have (spec `args = [{ ..., dtype = "bfloat16" }]`).
ARG_DTYPES = ("float16", "bfloat16", "float32", "float64")
DEFAULT_OPS = 4   # roundings a produced value is allowed by default: rtol = atol = ops * eps (see Grading.produced)


@dataclass(frozen=True)
class Grading:
    """How checks are compared: the fresh points drawn besides the student's own, the tolerances
    (relative/absolute) of predictions and of produced values, and the prediction
    rules: `predictions` "worked-out" (a prediction computed by running autograd or a PRODUCE function
    fails; see autograder.judging.worked) or "any"; `prediction_policy` "first" (the value committed before the
    answer was shown is graded; see autograder.judging.commit) or "last" (the final cell is graded).

    A produced value's default tolerance follows its dtype (`produced`): rtol = max(floor, ops * eps) and
    atol = max(floor_atol, ops * eps), with eps the dtype's machine epsilon (DTYPE_EPS), `ops` the check's
    operation count (default `ops`, DEFAULT_OPS) and the floors float32_rtol/atol (float16, bfloat16, float32,
    complex64, and any other dtype) or float64_rtol/atol (float64, complex128)."""

    fresh_points: int = 2                # points drawn besides the student's own
    predict_rtol: float = 2e-3           # a hand-computed prediction: about 3 significant figures
    predict_atol: float = 1e-6
    float32_rtol: float = 1e-5           # produced float32 values against sympy at the exact point
    float32_atol: float = 1e-5
    float64_rtol: float = 1e-9
    float64_atol: float = 1e-9
    predictions: Literal["worked-out", "any"] = "worked-out"
    prediction_policy: Literal["first", "last"] = "first"
    ops: int = DEFAULT_OPS               # roundings allowed by default (a check's `ops` replaces it)

    def default(self, dtype: str, ops: int | None = None) -> Tolerance:
        """The default tolerance of a value of `dtype` ("bfloat16", "float32", ...; an unknown or integer dtype has
        float32's floors and no eps) after `ops` roundings (None: this grading's `ops`): the floors of float32
        (float64 and complex128: of float64), raised to ops * eps where that is larger. float32 and float64 keep
        their floors at the default ops (4 * 2**-23 = 4.8e-7 < 1e-5); bfloat16's is 4 * 2**-7 = 0.03125."""
        n = self.ops if ops is None else ops
        floor = (self.float64_rtol, self.float64_atol) if dtype in ("float64", "complex128") else \
            (self.float32_rtol, self.float32_atol)
        scaled = n * DTYPE_EPS.get(dtype, 0.0)
        return Tolerance(max(floor[0], scaled), max(floor[1], scaled))

    def prediction(self, check: Check) -> Tolerance:
        """The tolerance of a prediction check (its own rtol/atol where the spec sets them); where the check declares
        the dtype its value has (`dtype = "bfloat16"`), that dtype's default tolerance where it is looser."""
        base = Tolerance(self.predict_rtol, self.predict_atol)
        if check.dtype:
            typed = self.default(check.dtype, check.ops)
            base = Tolerance(max(base.rtol, typed.rtol), max(base.atol, typed.atol))
        return Tolerance(check.rtol or base.rtol, check.atol or base.atol)

    def produced(self, check: Check, dtype: str) -> Tolerance:
        """The tolerance of a produced value of `dtype` (a tensor's, or "float64" for a Python number): the check's
        own rtol/atol where the spec sets them, else the default of `dtype` (see `default`) or of the dtype the check
        declares its value is computed in (`check.dtype`), whichever is looser, after the check's `ops` roundings."""
        base = self.default(dtype, check.ops)
        if check.dtype:
            typed = self.default(check.dtype, check.ops)
            base = Tolerance(max(base.rtol, typed.rtol), max(base.atol, typed.atol))
        return Tolerance(check.rtol or base.rtol, check.atol or base.atol)


# ------------------------------------------------------------------------------------------------ inputs

def student_key(student: str) -> str:
    """A student id as it seeds the student's parameters and as ids are compared: ids that differ only in case name
    one student ("Ada", "ada" and "ADA": JupyterHub lower-cases its user names, a roster or a learner may not; nbgrader
    #1534). str.lower, not casefold: an id with no capital letter keeps its own parameters."""
    return student.lower()


def same_student(a: str | None, b: str | None) -> bool:
    """Do two ids name the same student (student_key)? None names no one."""
    return a is not None and b is not None and student_key(a) == student_key(b)


@dataclass(frozen=True)
class Parameter:
    """How one parameter is drawn per student: "real" (|value| in [low, high] with `sign` and `decimals`),
    "integer" (low..high, both included) or "fixed" (`value`, the same for everyone: a kink or singular
    point an exercise is about)."""

    kind: Literal["real", "integer", "fixed"]
    low: Number | None = None
    high: Number | None = None
    sign: Literal["positive", "negative", "any"] = "positive"
    decimals: int = 2
    value: Number | None = None


@dataclass(frozen=True)
class Arg:
    """One argument of an exercise's produce functions: a scalar tensor leaf (default), a plain number
    (`tensor` false), or a tensor of several parameters (`params`, row-major in `shape`)."""

    name: str
    param: str | None = None                 # a scalar: the parameter it takes its value from
    params: tuple[str, ...] | None = None    # a tensor of these parameters' values (row-major)
    shape: tuple[int, ...] | None = None     # with params: the tensor's shape
    tensor: bool = True
    dtype: str = "float32"                   # one of ARG_DTYPES
    requires_grad: bool = True
    grad: str | None = None                  # parameter whose value pre-sets `.grad`
    objects: tuple[str, ...] | None = None   # an object of torch: objects[point[param]], a dotted name ("torch.autograd.grad")


@dataclass(frozen=True)
class Exercise:
    """One exercise: its produce functions and the arguments each is called with; `domain_points`: the spec's cap on
    the points release's domain check calls its functions at (None: the check's own budget; authoring.sweep)."""

    id: str
    title: str
    functions: tuple[str, ...]
    args: tuple[Arg, ...]
    domain_points: int | None = None

    def values(self, point: dict[str, Number]) -> dict[str, Number]:
        """Symbol -> value at `point`: every parameter, and each scalar argument's name bound to its parameter."""
        values = dict(point)
        values.update({a.name: point[a.param] for a in self.args if a.param})
        return values

    def arg_value(self, arg: Arg, point: dict[str, Number]) -> Any:
        """`arg`'s value at `point`: a number, nested lists for a tensor of parameters, or an object's dotted name."""
        if arg.objects:
            return arg.objects[int(point[arg.param])]
        if arg.params:
            return nest([point[p] for p in arg.params], list(arg.shape or (len(arg.params),)))
        return point[arg.param]

    def where(self, point: dict[str, Number]) -> str:
        """The arguments at `point` in words: "x=1.5, x.grad preset to 20.0" ("no arguments" for a function of none)."""
        parts = [f"{a.name}={self.arg_value(a, point)}" for a in self.args]
        parts += [f"{a.name}.grad preset to {point[a.grad]}" for a in self.args if a.grad]
        return ", ".join(parts) or "no arguments"

    def call_text(self, function: str) -> str:
        """How a call of `function` reads: "ex4(x, k)"."""
        return f"{function}({', '.join(a.name for a in self.args)})"


def nest(flat: list[Any], shape: list[int]) -> Any:
    """Row-major `flat` as nested lists of `shape` ([1, 2, 3, 4], [2, 2] -> [[1, 2], [3, 4]])."""
    if len(shape) <= 1:
        return flat
    step = len(flat) // shape[0]
    return [nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


# ------------------------------------------------------------------------------------------------ answers

@dataclass(frozen=True)
class NoneAnswer:
    """The answer None (".grad is None", "returns None")."""

    @property
    def text(self) -> str:
        return "None"


@dataclass(frozen=True)
class BoolAnswer:
    """True or False."""

    value: bool

    @property
    def text(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class ExprAnswer:
    """A sympy expression of the exercise's parameters and scalar arguments (instructor text)."""

    expr: str

    @property
    def text(self) -> str:
        return self.expr


@dataclass(frozen=True)
class SeqAnswer:
    """A tuple of answers (what torch.autograd.grad returns, for instance); `kind` "list" only where a
    misconception expects a list instead (an expectation is always a tuple or the reference run's form)."""

    items: tuple[Answer, ...]
    kind: Literal["tuple", "list"] = "tuple"

    @property
    def text(self) -> str:
        texts = [i.text for i in self.items]
        if self.kind == "list":
            return "[" + ", ".join(texts) + "]"
        return "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"


@dataclass(frozen=True)
class ClassAnswer:
    """An exception or warning class by name: what a misconception expects where the call raises (or
    the learner predicts it raises) something else, or nothing."""

    name: str

    @property
    def text(self) -> str:
        return self.name


@dataclass(frozen=True)
class DtypeAnswer:
    """A torch dtype by name (`name` as torch prints it without "torch.": "bfloat16"): what `x.dtype` is, or what a
    prediction names (torch.bfloat16, "bfloat16"). As a misconception of a value check (not a dtype check), it is the
    check's right value with this dtype: "forgot autocast" returns the right numbers as float32."""

    name: str

    @property
    def text(self) -> str:
        return f"torch.{self.name}"


@dataclass(frozen=True)
class InstalledAnswer:
    """A fact of the torch a run imports, read by the probe before any of the submission's code runs (never
    computed by sympy, never stored in the key: it stays right on every torch release). `fact` is one of
    INSTALLED_FACTS, "engine_flag(<object argument>)" naming the argument whose installed source is read."""

    fact: str

    @property
    def text(self) -> str:
        return f"installed {self.fact}"


# The installed facts a check may expect (spec `installed = ...`): torch's version strings, and the
# `accumulate_grad` keyword that a function's own source passes to autograd's engine (True or False; None where
# its source makes no engine call itself, as Tensor.backward, which delegates to torch.autograd.backward).
INSTALLED_FACTS = ("torch.__version__", "torch.version.git_version", "engine_flag")


def installed_key(fact: str, exercise: Exercise, point: dict[str, Number]) -> str:
    """The name a probe's hello reports `fact` under at `point`: "engine_flag(fn)" becomes
    "engine_flag:torch.autograd.grad" for the object the argument fn is there; the version facts are their own."""
    if fact.startswith("engine_flag(") and fact.endswith(")"):
        name = fact[len("engine_flag("):-1]
        arg = next(a for a in exercise.args if a.name == name)
        return "engine_flag:" + str(exercise.arg_value(arg, point))
    return fact


Answer = Union[NoneAnswer, BoolAnswer, ExprAnswer, SeqAnswer, ClassAnswer, InstalledAnswer, DtypeAnswer]


def answer_items(answer: Answer) -> tuple[Answer, ...]:
    """The answer's items: those of a tuple, else the answer alone."""
    return answer.items if isinstance(answer, SeqAnswer) else (answer,)


# ------------------------------------------------------------------------------------------------ expectations

@dataclass(frozen=True)
class ValueExpectation:
    """A value: predicted, returned or left in a `.grad`. `form` (produce checks, set at release) is the
    reference torch run's form of the value: kinds, dtypes and shapes, without numbers."""

    answer: Answer
    form: dict[str, Any] | None = None

    kind: ClassVar[str] = "value"


@dataclass(frozen=True)
class ConventionExpectation(ValueExpectation):
    """A value where torch and calculus differ by convention (relu at 0, sqrt at 0, the `where` NaN trap):
    `answer` is torch's value (graded, verified against the reference torch run at release); `sympy` is the
    analytic value under the stated formulation, shown beside it; `convention` names it."""

    convention: str = ""
    sympy: str = ""

    kind: ClassVar[str] = "convention"


@dataclass(frozen=True)
class RaisesExpectation:
    """An exception: the call must raise `exception` (or a subclass) with `phrase` in its message, raised by
    torch; a prediction names the class. `reference` (set at release) is what the reference run raised:
    {"exception": {"type", "mro", "message", "origin", "statement"}} or None."""

    exception: str
    phrase: str
    reference: dict[str, Any] | None = None

    kind: ClassVar[str] = "raises"


@dataclass(frozen=True)
class WarnsExpectation:
    """A warning: the call must emit `warning` (or a subclass) with `phrase` in its message; a prediction
    names the class."""

    warning: str
    phrase: str

    kind: ClassVar[str] = "warns"


@dataclass(frozen=True)
class InstalledExpectation(ValueExpectation):
    """A value that is a fact of the installed torch (InstalledAnswer items, alone or in a tuple): what the
    learner's code must read from the torch it runs on (its version, its source). The expected value of each run
    is what that run's probe read before the submission's code ran; the reference run of the solution must read
    the same at release. `form` is the reference run's, as for any value."""

    kind: ClassVar[str] = "installed"


Expectation = Union[ValueExpectation, ConventionExpectation, RaisesExpectation, WarnsExpectation, InstalledExpectation]


@dataclass(frozen=True)
class Sign:
    """One thing a produce call must observably have done for a misconception to be named at it (a value alone
    can have several causes): `what` is "<tensor argument>.grad" (that tensor's .grad after the call is `answer`),
    "warns" (the call emitted a warning whose message holds `phrase`), "message" (the call raised an exception
    whose message holds `phrase`) or "runs_backward" (the call ran Tensor.backward() or
    torch.autograd.backward(), or not: `flag`)."""

    what: str
    answer: Answer | None = None
    phrase: str = ""
    flag: bool = True


@dataclass(frozen=True)
class Misconception:
    """A named wrong mental model of a check: `answer` is the value it leads to (a sympy expression of the
    exercise's parameters, None, a bool, a tuple or list, or a class name), `name` a few words ("one pass
    short"), `feedback` one or two sentences for the learner whose wrong value it explains. `id` is unique
    within its exercise (the spec's [[exercise.misconception]] lists the checks it applies to, and each of
    those checks carries it). `evidence`: on a produce check, it is named only where every Sign holds too
    (a prediction is named by its value)."""

    id: str
    name: str
    answer: Answer
    feedback: str
    evidence: tuple[Sign, ...] = ()
    overlap: Overlap | None = None


@dataclass(frozen=True)
class Overlap:
    """A misconception the spec accepts as passing for the right answer for up to `share` (0..1) of the students
    (release refuses one above 1 % otherwise), and why that is acceptable, in a sentence."""

    share: float
    why: str


@dataclass(frozen=True)
class OnCuda:
    """What a produce check expects instead when the run has CUDA (`torch.cuda.is_available()`): a value, and why.
    Keys are built on torch's CPU build, so the reference run never checks it (the report says so)."""

    answer: Answer
    why: str


@dataclass(frozen=True)
class Check:
    """One graded check. A prediction reads the variable `name`; a production calls `function` and observes
    `observe` ("returned" or "<tensor argument>.grad", either followed by ".dtype" for its dtype). `version_sensitive` checks are flagged in a report
    made on another torch than the key's `torch_observed`, or with CUDA. `misconceptions` are the named wrong
    answers a failed outcome is recognised as (autograder.judging.judge). `on_cuda`: a produce check whose
    behaviour depends on the device (GradScaler() without a device), expected instead where CUDA is available."""

    id: str
    exercise: str
    kind: Kind
    title: str
    expectation: Expectation
    why: str
    points: float = 1.0
    visibility: Visibility = "public"
    name: str | None = None
    function: str | None = None
    observe: str | None = None
    rtol: float | None = None
    atol: float | None = None
    version_sensitive: bool = False
    misconceptions: tuple[Misconception, ...] = ()
    on_cuda: OnCuda | None = None
    container: Literal["tuple"] | None = None   # spec `container = "tuple"`: a list in place of the tuple fails
    ops: int | None = None      # roundings its value may carry (Grading.produced); None: the grading's `ops`
    dtype: str | None = None    # the dtype its value is computed in, where the spec declares it (its tolerance)


def container_is_lesson(check: Check) -> bool:
    """Must the check's tuple be a tuple, so that a list of the same items fails? Only where the container is the
    lesson: the spec says so (`container = "tuple"` on the check), a misconception of the check is the list
    (`container = "list"` on it: the instructor named the list as a mistake), or the answer is a one-item tuple,
    which only torch's own container asks for (`(g,)` from `torch.autograd.grad`). Elsewhere a tuple of results is
    how an exercise asks for a pair, and `[a, b]` is `(a, b)` written with other brackets."""
    answer = getattr(check.expectation, "answer", None)
    if not isinstance(answer, SeqAnswer):
        return True   # no tuple to write as a list (a vector's forms are compare_predicted's own)
    return (check.container == "tuple" or len(answer.items) == 1
            or any(isinstance(m.answer, SeqAnswer) and m.answer.kind == "list" for m in check.misconceptions))


@dataclass(frozen=True)
class HiddenChecks:
    """What a public key says of the checks it leaves out: how many, and their points."""

    checks: int
    points: float


@dataclass(frozen=True)
class Key:
    """An assignment's answer key. The full key (build/<id>/key.json, staff only) has every check and the
    `fresh_seed` that seeds the graded fresh points; the public key (assignments/<id>/public_key.json, for
    the self-check) has only the public checks, no seed, and `hidden_checks` saying what it left out.

    `digest` names the full key's content (reports and notebooks carry it), salted with `digest_salt` (made
    from the solution's code, never shipped) so that a student cannot confirm a guess of a hidden check by
    recomputing it from the public key; `public_digest` names the public key's. `torch_version` is the torch of the reference run the key was built from.
    """

    assignment: str
    title: str
    notebook: str
    torch_observed: str
    torch_version: str
    sympy_version: str
    limits: Limits
    grading: Grading
    parameters: dict[str, Parameter]
    exercises: tuple[Exercise, ...]
    checks: tuple[Check, ...]
    digest: str = ""
    fresh_seed: str | None = None
    public: bool = False
    hidden_checks: HiddenChecks | None = None
    public_digest: str = ""
    digest_salt: str = ""   # full key only: mixed into `digest`, so that a student cannot test a guess of it

    def exercise(self, exercise_id: str) -> Exercise:
        """The exercise with this id. Raises KeyError."""
        for e in self.exercises:
            if e.id == exercise_id:
                return e
        raise KeyError(exercise_id)

    def check(self, check_id: str) -> Check:
        """The check with this id. Raises KeyError."""
        for c in self.checks:
            if c.id == check_id:
                return c
        raise KeyError(check_id)

    @property
    def max_score(self) -> float:
        """The points of this key's checks."""
        return float(sum(c.points for c in self.checks))

    def only(self, exercises: list[str] | None) -> Key:
        """This key restricted to the checks of `exercises` (None: all)."""
        return self if exercises is None else replace(self, checks=tuple(c for c in self.checks
                                                                          if c.exercise in exercises))

    def with_limits(self, overrides: dict[str, Number]) -> Key:
        """This key with some limits replaced (`--limit NAME=VALUE`); its digest is kept. Raises ValueError
        (see `Limits.overridden`)."""
        return replace(self, limits=self.limits.overridden(overrides))
