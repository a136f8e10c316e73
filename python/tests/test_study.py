"""Study files: parsing, axis expansion, overrides, quick mode, stable run ids, errors."""
import pytest

from aqmlab.study import StudyError, deep_merge, parse_study

STUDY = """
[study]
name = "demo"
repetitions = 3
seed = 10
findings = ["fifo is slow"]

[quick]
repetitions = 1
duration = "5s"

[base]
run = { duration = "60s", warmup = "10s" }
dumbbell = { rate = "10Mbit", delay = "25ms", qdisc = { kind = "fifo" } }

[[experiment]]
name = "steady"
patch = { flow = [ { kind = "ping", from = "client0", to = "server0", start = "30s" } ] }
measures = ["induced_latency"]

  [[experiment.axis]]
  name = "qdisc"
  path = "dumbbell.qdisc"
  values = [ { kind = "fifo", limit = 127 }, { kind = "fifo", limit = 10 } ]
  labels = ["big", "small"]

  [[experiment.axis]]
  name = "link"
  [[experiment.axis.values]]
  label = "10/1"
  patch = { dumbbell = { up = { rate = "1Mbit" } } }
  [[experiment.axis.values]]
  label = "10/10"
  patch = {}

  [[experiment.override]]
  when = { link = "10/1", qdisc = "small" }
  patch = { dumbbell = { up = { qdisc = { kind = "fifo", limit = 5 } } } }
"""


def test_expansion_and_overrides():
    s = parse_study(STUDY)
    runs = s.runs()
    assert len(runs) == 2 * 2 * 3
    assert len({r.run_id for r in runs}) == len(runs)
    by = {(r.params["qdisc"], r.params["link"], r.repetition): r for r in runs}
    r = by[("small", "10/1", 2)]
    assert r.seed == 12
    d = r.scenario["dumbbell"]
    assert d["qdisc"] == {"kind": "fifo", "limit": 10}
    assert d["up"] == {"rate": "1Mbit", "qdisc": {"kind": "fifo", "limit": 5}}
    assert d["rate"] == "10Mbit" and d["delay"] == "25ms"
    assert "up" not in by[("small", "10/10", 0)].scenario["dumbbell"]
    assert by[("big", "10/1", 0)].scenario["dumbbell"]["up"] == {"rate": "1Mbit"}


def test_run_ids_are_stable_across_parses():
    a = [r.run_id for r in parse_study(STUDY).runs()]
    b = [r.run_id for r in parse_study(STUDY).runs()]
    assert a == b


def test_quick_mode_scales_time():
    s = parse_study(STUDY, quick=True)
    runs = s.runs()
    assert len(runs) == 4
    sc = runs[0].scenario
    assert sc["run"]["duration"] == "5s"
    assert sc["run"]["warmup"] == "0.833333333s"
    assert sc["flow"][0]["start"] == "2.5s"
    assert "quick" in s.quick_note


def test_quick_note_names_experiments_with_their_own_quick_settings():
    # edge-router: 1 repetition / 20 s study-wide, but rrul keeps 3 repetitions and the web
    # experiments their own run lengths; the banner must not claim "at most 1" alone.
    from aqmlab.study import find_study, load_study

    note = load_study(find_study("edge-router"), quick=True).quick_note
    assert note.startswith("quick mode: at most 1 repetition(s), runs capped at 20 s; own quick settings: ")
    assert "rrul 3 repetition(s)" in note and "web_delay 60 s runs" in note and "web_bandwidth 150 s runs" in note
    assert "own quick settings" not in load_study(find_study("saturated-tcp"), quick=True).quick_note
    assert load_study(find_study("edge-router"), quick=False).quick_note == ""


def test_quick_mode_moves_packet_trace_windows_into_the_run():
    """A 501 s run with 1 s traces at 5, 50 and 500 s, capped to 25 s (scale 25/501): the
    starts scale, the 1 s length is kept, and the last window is moved back to end at 25 s
    (it was past the end, so quick mode traced nothing there and drew empty panels)."""
    from aqmlab.study import _cap_durations, quick_window

    doc = {"run": {"duration": "501s", "packet_trace": [["5s", "6s"], ["50s", "51s"], ["500s", "501s"]]}}
    wins = _cap_durations(doc, 25.0)["run"]["packet_trace"]
    k = 25 / 501
    got = [(float(a[:-1]), float(b[:-1])) for a, b in wins]
    assert got == [pytest.approx((5 * k, 5 * k + 1)), pytest.approx((50 * k, 50 * k + 1)), (24.0, 25.0)]
    assert quick_window(10, 110, 0.25, 25) == (0.0, 25.0)  # longer than the run: the whole run


def test_deep_merge_replaces_arrays():
    assert deep_merge({"a": {"b": 1, "c": [1, 2]}}, {"a": {"c": [3]}}) == {"a": {"b": 1, "c": [3]}}


@pytest.mark.parametrize(
    "text,needle",
    [
        ("[study]\nname='x'\n", "experiment"),
        ("[study]\nname='x'\n[[experiment]]\nname='e'\nfoo=1\n", "foo"),
        ("[studyy]\nname='x'\n", "studyy"),
        ("[study]\nname='x'\n[[experiment]]\nname='e'\n[[experiment.axis]]\nname='a'\nvalues=[]\n", "values"),
        (
            "[study]\nname='x'\n[[experiment]]\nname='e'\n[[experiment.axis]]\nname='a'\npath='p'\nvalues=[1]\n"
            "[[experiment.override]]\nwhen={b='1'}\npatch={}\n",
            "no such axis",
        ),
        ("[study\n", "line"),
    ],
)
def test_bad_studies_name_the_key(text, needle):
    with pytest.raises(StudyError, match=needle):
        parse_study(text)


_E = "[study]\nname='x'\n[[experiment]]\nname='e'\n"


@pytest.mark.parametrize(
    "text,needle",
    [
        # each of these raised a raw ValueError/TypeError/AttributeError (found by the
        # study campaign, benchmarks/fuzz_campaign.py --studies)
        ("[study]\nname='x'\nrepetitions='x'\n[[experiment]]\nname='e'\n", "study.repetitions: expected an integer"),
        ("[study]\nname='x'\nrepetitions=[1]\n[[experiment]]\nname='e'\n", "study.repetitions"),
        ("[study]\nname='x'\nseed={a=1}\n[[experiment]]\nname='e'\n", "study.seed"),
        ("quick=1\n" + _E, "quick: expected a table"),
        ("[quick]\nrepetitions='2'\n" + _E, "quick.repetitions"),
        (_E + "repetitions=1.5\n", r"experiment\[0\].repetitions"),
        (_E + "axis=1\n", r"experiment\[0\].axis: expected an array of tables"),
        (_E + "override=[1]\n", r"experiment\[0\].override\[0\]: expected a table"),
        (_E + "override=[{when=1, patch={}}]\n", r"override\[0\].when: expected a table"),
        (_E + "patch=[]\n", r"experiment\[0\].patch: expected a table"),
        (_E + "measures='goodput'\n", r"experiment\[0\].measures"),
        (_E + "[[experiment.axis]]\nname='a'\npath=['dumbbell']\nvalues=[1]\n", r"axis\[0\].path: expected a string"),
        (_E + "[[experiment.axis]]\nname='a'\npath='run..x'\nvalues=[1]\n", r"axis\[0\].path: 'run..x' is not a dotted key"),
        (_E + "[[experiment.axis]]\nname='a'\nvalues=[{label='v', patch=3}]\n", r"values\[0\].patch: expected a table"),
        ("[study]\nname=1\n[[experiment]]\nname='e'\n", "study.name: expected a string"),
        ("[study]\nname='x'\n[base]\nflow=1\n[quick]\nduration='1s'\n[[experiment]]\nname='e'\n", None),
    ],
)
def test_mistyped_study_keys_are_study_errors_naming_the_key(text, needle):
    if needle is None:  # accepted here; the scenario's own validation names `flow`
        parse_study(text, quick=True).runs()
        return
    with pytest.raises(StudyError, match=needle):
        parse_study(text, quick=True).runs()


def test_a_study_of_a_billion_runs_is_refused_at_once():
    """`repetitions = 1000000000` made `runs()` build a billion run specs (the study
    campaign's hang); it is refused when the study is read, naming the experiment."""
    import time

    t = time.perf_counter()
    with pytest.raises(StudyError, match=r"study.repetitions: 1000000000 is not allowed \(1 to 1000000\)"):
        parse_study("[study]\nname='x'\nrepetitions=1000000000\n[[experiment]]\nname='e'\n")
    with pytest.raises(StudyError, match=r"experiment\[0\]: the study expands to more than 1,000,000 runs"):
        parse_study(_E + "repetitions=1000\n[[experiment.axis]]\nname='a'\npath='run.seed'\nvalues=" + str(list(range(2000))) + "\n")
    assert time.perf_counter() - t < 1.0


def test_experiment_quick_duration_overrides_the_study_cap():
    text = STUDY.replace('measures = ["induced_latency"]', 'measures = ["induced_latency"]\nquick_duration = "30s"')
    s = parse_study(text, quick=True)
    assert s.runs()[0].scenario["run"]["duration"] == "30s"
    assert parse_study(text).runs()[0].scenario["run"]["duration"] == "60s"


def test_quick_cap_applies_to_flows_given_by_axis_patches():
    text = STUDY.replace('''  [[experiment.axis.values]]
  label = "10/10"
  patch = {}''', '''  [[experiment.axis.values]]
  label = "10/10"
  patch = { flow = [ { kind = "cbr", from = "client0", to = "server0", rate = "1Mbit", start = "30s", stop = "45s" } ] }''')
    s = parse_study(text, quick=True)
    r = next(r for r in s.runs() if r.params["link"] == "10/10")
    assert r.scenario["flow"][0]["start"] == "2.5s" and r.scenario["flow"][0]["stop"] == "3.75s"


def test_docs_study_md_documents_every_key_and_its_example_parses():
    """docs/study.md: every key the parser accepts, every figure type and table key is
    documented, and its annotated example is a valid study (outputs included)."""
    import pathlib
    import re

    from aqmlab import plots, report, tables
    from aqmlab.study import parse_study

    root = pathlib.Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "study.md").read_text()
    src = (root / "python" / "aqmlab" / "study.py").read_text()
    exp_keys = re.search(r'ok = \{([^}]*)\}\n\s*bad = set\(e\) - ok', src).group(1)
    keys = set(re.findall(r'"([a-z_]+)"', exp_keys))
    assert {"keep_series", "quick_duration", "flent"} <= keys
    keys |= {"repetitions", "seed", "findings", "description", "duration", "path", "values", "labels", "when",
             "measure", "lower", "than", "higher", "order", "trend", "at_most", "at_least", "between", "by", "see"}
    keys |= set(tables._KEYS) | set(plots.FIGURE_TYPES)
    missing = sorted(k for k in keys if f"`{k}`" not in doc and f"`{k} " not in doc and f"{k} =" not in doc)
    assert not missing, f"docs/study.md does not mention {missing}"
    example = re.search(r"```toml\n(.*?)```", doc, re.S).group(1)
    st = parse_study(example)
    report.validate_outputs(st)
    assert len(st.runs()) == 12 and len(parse_study(example, quick=True).runs()) == 4


def test_edge_router_page_load_at_1mbit_has_a_value_in_quick_mode():
    """The heavy page (4 MB) needs ~40 s at 1 Mbit/s: the bandwidth runs are long enough
    for a page to finish after the warm-up (the 1 Mbit/s point was missing)."""
    import math
    import pathlib

    import aqmlab
    from aqmlab import measures
    from aqmlab.study import load_study

    root = pathlib.Path(__file__).resolve().parents[2]
    st = load_study(str(root / "studies" / "edge-router.toml"), quick=True)
    spec = next(r for r in st.runs(["web_bandwidth"]) if r.params["bandwidth"] == "1Mbit")
    res = aqmlab.run(spec.scenario, seed=spec.seed)
    assert math.isfinite(measures.compute(res, ["page_time"])["page_time"])


def test_edge_router_ecn_marks_on_the_download_qdisc_only():
    """"ECN on" in the edge-router study is sqm-scripts' 2014 default: ECN at the
    endpoints, marking on the router's inbound (download) qdisc, dropping on the upload
    qdisc (egress NOECN). With upload marking, ARED dropped every non-ECT download ACK
    while it only marked the upload data (docs/validation.md)."""
    import pathlib

    from aqmlab.study import load_study

    root = pathlib.Path(__file__).resolve().parents[2]
    st = load_study(str(root / "studies" / "edge-router.toml"), quick=True)
    seen = set()
    for spec in st.runs(["rrul"]):
        d = spec.scenario["dumbbell"]
        down = d.get("down", {}).get("qdisc", d["qdisc"])
        up = d.get("up", {}).get("qdisc", d["qdisc"])
        scheme, ecn = spec.params["scheme"], spec.params["ecn"]
        assert spec.scenario["tcp"]["ecn"] is (ecn == "on")
        assert up["kind"] == down["kind"], (scheme, up, down)
        if scheme in ("codel", "pie", "fq_codel", "ared"):
            # fq_codel marks by default (Linux); the others need ecn = true
            marks_down = down.get("ecn", down["kind"] == "fq_codel")
            marks_up = up.get("ecn", up["kind"] == "fq_codel")
            assert marks_down is (ecn == "on"), (scheme, ecn, down)
            assert marks_up is False, (scheme, ecn, up)
            seen.add((scheme, ecn))
    assert len(seen) == 8


@pytest.mark.parametrize("name", ["residential", "saturated-tcp", "edge-router", "docsis-downstream", "l4s", "sqm"])
def test_every_full_length_run_of_the_shipped_studies_validates(name, monkeypatch):
    """The full studies (paper durations, not --quick) pass validation, resource budget
    included, on a machine with 8 GB (budget 4 GB): the resource model once refused every
    ARED run of the full residential study (a qdisc without a `limit` key was estimated to
    hold every packet that arrives). Repetitions differ only in their seed, so the first
    of each combination stands for all."""
    import aqmlab
    from aqmlab.study import load_study

    monkeypatch.setenv("AQMLAB_MAX_MEMORY", "4GB")
    study = load_study(name)
    refused = {}
    for spec in study.runs(None):
        if spec.repetition == 0:
            try:
                aqmlab.validate(spec.scenario)
            except aqmlab.ScenarioError as e:
                refused[(spec.experiment, tuple(sorted(spec.params.items())))] = str(e)
    assert not refused, refused


_TOPO = """
[study]
name = "topo"
[[base.node]]
name = "a"
kind = "host"
[[base.node]]
name = "r"
kind = "router"
[[base.node]]
name = "b"
kind = "host"
[[base.link]]
from = "a"
to = "r"
rate = "1Gbit"
[[base.link]]
name = "uplink"
from = "r"
to = "b"
rate = "10Mbit"
[[base.flow]]
kind = "bulk"
name = "big"
from = "a"
to = "b"
[[base.flow]]
kind = "bulk"
name = "small"
from = "a"
to = "b"
[[experiment]]
name = "e"
  [[experiment.axis]]
  name = "q"
"""


def test_an_axis_path_selects_one_table_of_an_array_by_name_or_index():
    st = parse_study(_TOPO + "  path = 'link[uplink].qdisc'\n  values = [{ kind = 'fifo' }, { kind = 'cake', bandwidth = '9Mbit' }]\n"
                     "  [[experiment.axis]]\n  name = 'cc'\n  path = 'flow[1].tcp.cc'\n  values = ['reno', 'cubic']\n"
                     "  [[experiment.axis]]\n  name = 'first'\n  path = 'link[a->r].delay'\n  values = ['5ms']\n")
    runs = {(s.params["q"], s.params["cc"]): s.scenario for s in st.runs()}
    assert len(runs) == 4
    sc = runs[("cake", "cubic")]
    # only the selected tables change; the arrays keep their other elements and order
    assert sc["link"][1] == {"name": "uplink", "from": "r", "to": "b", "rate": "10Mbit", "qdisc": {"kind": "cake", "bandwidth": "9Mbit"}}
    assert sc["link"][0] == {"from": "a", "to": "r", "rate": "1Gbit", "delay": "5ms"}  # named by FROM->TO
    assert [f["name"] for f in sc["flow"]] == ["big", "small"]
    assert "tcp" not in sc["flow"][0] and sc["flow"][1]["tcp"] == {"cc": "cubic"}
    assert runs[("fifo", "reno")]["link"][1]["qdisc"] == {"kind": "fifo"}
    # and a scenario the simulator accepts
    import aqmlab
    from aqmlab.scenario import to_toml

    aqmlab.validate(to_toml(sc))


@pytest.mark.parametrize(
    "path,needle",
    [
        ("link[upink].qdisc", r"experiment\[0\].axis\[0\].path 'link\[upink\].qdisc': no \[\[link\]\] named 'upink', "
                              r"did you mean 'uplink'\? \(names: a->r, uplink; or select by index, link\[0\]\)"),
        ("link[2].qdisc", r"link\[2\] does not exist: the scenario has 2 \[\[link\]\] table\(s\) \(indices 0 to 1\)"),
        ("dumbbell[0].qdisc", r"dumbbell is not an array of tables"),
        ("link[uplink]x.qdisc", r"is not a dotted key such as"),
        ("link[].qdisc", r"is not a dotted key such as"),
    ],
)
def test_a_bad_array_selector_in_an_axis_path_is_named(path, needle):
    with pytest.raises(StudyError, match=needle):
        parse_study(_TOPO + f"  path = '{path}'\n  values = [{{ kind = 'fifo' }}]\n").runs()


def test_a_flow_without_a_name_answers_to_its_result_name():
    """A [[flow]] without `name` is `KIND` + its table index in the results (`bulk0`,
    instances `bulk0.0` …): an axis path selects it by that name, as a [[link]] without a
    name answers to FROM->TO; a named flow keeps its own name."""
    text = """\
[study]
name = "s"
[base]
dumbbell = { rate = "10Mbit" }
flow = [ { kind = "bulk", from = "server0", to = "client0" }, { kind = "ping", from = "client0", to = "server0" },
         { kind = "bulk", name = "up", from = "client0", to = "server0" } ]
[[experiment]]
name = "e"
  [[experiment.axis]]
  name = "flows"
  path = "flow[bulk0].count"
  values = [1, 4]
  [[experiment.axis]]
  name = "probe"
  path = "flow[ping1].interval"
  values = ["50ms"]
"""
    runs = {str(s.params["flows"]): s.scenario for s in parse_study(text).runs()}
    assert runs["4"]["flow"][0]["count"] == 4 and "count" not in runs["4"]["flow"][2]
    assert runs["4"]["flow"][1]["interval"] == "50ms"
    import aqmlab
    from aqmlab.scenario import to_toml

    names = [f["name"] for f in aqmlab.validate(to_toml(runs["4"]))["flows"]]
    assert names[:4] == ["bulk0.0", "bulk0.1", "bulk0.2", "bulk0.3"] and "ping1" in names
    with pytest.raises(StudyError, match=r"no \[\[flow\]\] named 'bulk2', did you mean 'bulk0'\? \(names: bulk0, ping1, up;"):
        parse_study(text.replace("flow[bulk0]", "flow[bulk2]")).runs()


def test_two_tables_of_one_kind_on_an_axis_are_told_to_take_labels():
    """Two FIFOs of different limits on one axis are both labelled `fifo`: the error says
    why and that `labels` gives them their own."""
    text = ('[study]\nname = "x"\n[base]\ndumbbell = { rate = "10Mbit" }\n[[experiment]]\nname = "e"\n'
            '  [[experiment.axis]]\n  name = "q"\n  path = "dumbbell.qdisc"\n  values = [{kind="fifo"}, {kind="fifo", limit=100}]\n')
    with pytest.raises(StudyError, match=r"labels must be unique, got \['fifo', 'fifo'\]; without `labels` a table value is "
                                         r"labelled by its `kind`, any other by its text: give `labels = \[\.\.\.\]`, one per value"):
        parse_study(text)
    assert [v.label for v in parse_study(text.replace("limit=100}]", "limit=100}]\n  labels = ['fifo1000', 'fifo100']"))
            .experiments[0].axes[0].values] == ["fifo1000", "fifo100"]
