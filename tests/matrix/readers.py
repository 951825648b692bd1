"""Independent readers of strata's outputs for the output matrix (matrix.py).

Each reader opens one output with a tool that is not strata (Python's json,
sqlite3, Perfetto's own protos through the `perfetto` package, an HTML parser,
babeltrace2) and returns the counts it finds, one key per level, with the names
of the report's `counts` object. A level the format cannot represent is left
out. A reader raises Problem for an output that is malformed (a slice closed
twice, a flow with one end, a sample whose stack does not resolve).
"""
import collections
import html.parser
import json
import re
import sqlite3
import subprocess


class Problem(Exception):
    """The output is malformed: what is wrong, in one line."""


class Skip(Exception):
    """The reader's tool is not installed here."""


def check(cond, what):
    if not cond:
        raise Problem(what)


# ---- report --json -----------------------------------------------------------------

def read_report_json(path):
    with open(path) as f:
        r = json.load(f)
    check(isinstance(r.get("counts"), dict), "no counts object in the JSON report")
    got = {}
    # The report's own tables that count the same events as the counts object.
    samples = ((r.get("os") or {}).get("samples") or {}).get("total")
    if samples is not None:
        # The report's tables leave strata's own threads out and list them apart.
        got["samples"] = samples + sum(t.get("samples", 0) for t in (r.get("os") or {}).get("strata_threads", []))
    if isinstance(r.get("collectors"), list):
        got["not_recorded"] = sum(1 for c in r["collectors"] if c.get("state") != "ok")
    return got, r


# ---- report (text) ----------------------------------------------------------------

def read_report_text(path, ref):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    check(text.startswith("strata report: "), "the text report does not start with its title")
    got = {}
    m = re.search(r"^CPU samples: (\d+)(?: \(and (\d+) in strata's own threads\))?$", text, re.M)
    got["samples"] = int(m.group(1)) + int(m.group(2) or 0) if m else 0
    nr = re.search(r"^Not recorded\n((?:  .*\n)*)", text, re.M)
    got["not_recorded"] = len(nr.group(1).splitlines()) if nr else 0
    return got


# ---- report --html -------------------------------------------------------------------

class _ScriptData(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.data, self._in = None, False

    def handle_starttag(self, tag, attrs):
        self._in = tag == "script" and dict(attrs).get("id") == "strata-data"

    def handle_endtag(self, tag):
        self._in = False

    def handle_data(self, d):
        if self._in:
            self.data = (self.data or "") + d


def read_report_html(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    check("https://" not in text and "<script src" not in text, "the HTML report fetches something")
    p = _ScriptData()
    p.feed(text)
    check(p.data is not None, "no embedded report data (#strata-data)")
    r = json.loads(p.data)
    check(isinstance(r.get("counts"), dict), "no counts in the HTML report's data")
    return dict(r["counts"]), r


def render_html(chromium, path, profile):
    """The page as headless Chromium leaves it after its script ran (the DOM)."""
    out = subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile,
                          "--virtual-time-budget=5000", "--dump-dom", "file://" + path],
                         capture_output=True, text=True, timeout=120)
    check('data-rendered="1"' in out.stdout, "the HTML report's script did not finish in Chromium")
    return out.stdout


# ---- export -f chrome-json --------------------------------------------------------------

def read_chrome_json(path):
    with open(path) as f:
        j = json.load(f)
    check(isinstance(j, dict) and isinstance(j.get("traceEvents"), list), "not the Trace Event Format's object form")
    got = collections.Counter({k: 0 for k in ("slices", "steps", "modules", "syscalls", "thread_states",
                                              "context_switches", "instants", "counters", "memory")})
    flows = collections.defaultdict(lambda: [0, 0])
    named = set()
    for e in j["traceEvents"]:
        ph = e.get("ph")
        # Perfetto's JSON importer keeps pids and tids in 32 bits (a larger one reads as 0;
        # Kineto writes some tids as negative 32-bit numbers).
        check(all(-2**31 <= e.get(k, 0) < 2**32 for k in ("pid", "tid")), f"a pid or tid beyond 32 bits: {e}")
        if ph == "M":
            if e.get("name") == "thread_name":
                named.add((e["pid"], e["tid"]))
            continue
        if ph == "X":
            check(e.get("dur", -1) >= 0, "an X event without a duration")
            check((e["pid"], e["tid"]) in named, f"an X event on an unnamed thread {e['pid']}/{e['tid']}")
            cat = e.get("cat")
            if cat == "syscall":
                got["syscalls"] += 1
            elif cat == "thread_state":
                got["thread_states"] += 1
                got["context_switches"] += e.get("name") == "running"
            else:
                got["slices"] += 1
                args = e.get("args") or {}
                got["steps"] += "step" in args and cat == "user_annotation"
                got["modules"] += args.get("kind") == "module"
        elif ph == "i":
            got["instants"] += 1
        elif ph == "C":
            got["memory" if e.get("cat") == "memory" else "counters"] += 1
        elif ph in ("s", "f"):
            flows[(e.get("cat"), e["id"])][ph == "f"] += 1
    for key, (s, f) in flows.items():
        check(s == 1 and f == 1, f"flow {key} has {s} start(s) and {f} end(s)")
    got["flows"] = len(flows)
    frames = j.get("stackFrames") or {}
    for fid, fr in frames.items():
        check("parent" not in fr or fr["parent"] in frames, f"stack frame {fid} has an unknown parent")
    samples = j.get("samples") or []
    for s in samples:
        check("sf" not in s or str(s["sf"]) in frames, "a sample whose stack frame is not in stackFrames")
    got["samples"] = len(samples)
    other = j.get("otherData") or {}
    got["not_recorded"] = len(other.get("not_recorded") or [])
    return dict(got)


# ---- export -f sqlite --------------------------------------------------------------------

SQLITE_COUNTS = {
    "slices": "SELECT count(*) FROM slices",
    "steps": "SELECT count(*) FROM steps",
    "modules": "SELECT count(*) FROM modules",
    "flows": "SELECT count(*) FROM flows",
    "instants": "SELECT count(*) FROM instants",
    "samples": "SELECT count(*) FROM cpu_samples",
    "stack_frames": "SELECT count(*) FROM stack_frames",
    "thread_states": "SELECT count(*) FROM thread_states",
    "context_switches": "SELECT count(*) FROM context_switches",
    "syscalls": "SELECT count(*) FROM syscalls",
    "counter_series": "SELECT count(*) FROM counter_series",
    "counters": "SELECT count(*) FROM counters",
    "memory": "SELECT count(*) FROM memory",
    "page_faults": "SELECT count(*) FROM page_faults",
    "block_io": "SELECT count(*) FROM block_io",
    "not_recorded": "SELECT count(*) FROM not_recorded",
}


def read_sqlite(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    try:
        # A level without its table holds none of its events.
        got = {k: db.execute(q).fetchone()[0] if q.rsplit(" ", 1)[1] in tables else 0 for k, q in SQLITE_COUNTS.items()}
        if {"flows", "slices", "cpu_samples", "callsites"} - tables:
            return got
        dangling = db.execute("SELECT count(*) FROM flows f LEFT JOIN slices a ON a.id = f.from_slice_id "
                              "LEFT JOIN slices b ON b.id = f.to_slice_id WHERE a.id IS NULL OR b.id IS NULL").fetchone()[0]
        check(dangling == 0, f"{dangling} flows point to no slice")
        orphan = db.execute("SELECT count(*) FROM cpu_samples s LEFT JOIN callsites c ON c.id = s.callsite_id "
                            "WHERE s.callsite_id IS NOT NULL AND c.id IS NULL").fetchone()[0]
        check(orphan == 0, f"{orphan} samples point to no callsite")
    finally:
        db.close()
    return got


def sql_examples(doc_path, marker="<!-- examples: any strata trace -->"):
    """The SQL statements of the block after `marker` in docs/sqlite-schema.md."""
    with open(doc_path) as f:
        text = f.read()
    check(marker in text, f"{doc_path} lost its marker {marker!r}")
    block = text.split(marker, 1)[1].split("```sql", 1)[1].split("```", 1)[0]
    stmts, cur = [], []
    for line in block.splitlines():
        if line.startswith("--") and not cur:
            continue
        if line.strip():
            cur.append(line)
        if line.rstrip().endswith(";"):
            stmts.append("\n".join(cur))
            cur = []
    return stmts


def run_sql(path, sql):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


# ---- export -f perfetto ------------------------------------------------------------------

def read_perfetto(path):
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    except Exception as e:  # not installed, or a protobuf runtime too old for it
        raise Skip(f"Perfetto's Python package is unavailable ({e})")
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    got = collections.Counter({k: 0 for k in ("slices", "steps", "modules", "syscalls", "context_switches", "samples",
                                              "instants", "counters", "memory", "not_recorded")})
    described, counter_tracks, memory_tracks = set(), set(), set()
    names, functions, frames, callstacks, mappings = {}, set(), set(), set(), set()
    open_slices = collections.defaultdict(list)
    flows_out, flows_in = collections.Counter(), collections.Counter()
    last_ts = 0
    for p in trace.packet:
        d = p.interned_data
        if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            names, functions, frames, callstacks, mappings = {}, set(), set(), set(), set()
        for n in d.event_names:
            names[n.iid] = n.name
        functions.update(x.iid for x in d.function_names)
        for m in d.mappings:
            mappings.add(m.iid)
        for fr in d.frames:
            check(fr.function_name_id in functions, "a frame names an uninterned function")
            check(fr.mapping_id in mappings, "a frame is in an uninterned mapping")
            frames.add(fr.iid)
        for cs in d.callstacks:
            check(all(x in frames for x in cs.frame_ids), "a callstack has an uninterned frame")
            callstacks.add(cs.iid)
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            described.add(td.uuid)
            if td.HasField("counter"):
                (memory_tracks if td.name.startswith(("memory allocated (", "runtime memory (")) else counter_tracks).add(td.uuid)
            continue
        if p.HasField("trace_attributes"):
            got["not_recorded"] += sum(1 for a in p.trace_attributes.attribute if a.key.startswith("strata.not_recorded."))
            continue
        if p.HasField("ftrace_events"):
            for ev in p.ftrace_events.event:
                if ev.HasField("sched_switch"):
                    got["context_switches"] += ev.sched_switch.next_pid != 0
            continue
        if p.HasField("perf_sample"):
            s = p.perf_sample
            check(not s.HasField("callstack_iid") or s.callstack_iid in callstacks, "a sample with an uninterned callstack")
            got["samples"] += 1
            continue
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        check(e.track_uuid in described, "an event on an undescribed track")
        check(p.timestamp >= last_ts, "track events out of time order")
        last_ts = p.timestamp
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            check(e.name_iid in names, "a slice with an uninterned name")
            cats = set(e.categories)
            if "syscall" in cats:
                got["syscalls"] += 1
            else:
                got["slices"] += 1
                got["steps"] += "step" in cats
                got["modules"] += "module" in cats
            open_slices[e.track_uuid].append(p.timestamp)
            flows_out.update(e.flow_ids)
            flows_in.update(e.terminating_flow_ids)
        elif e.type == pb.TrackEvent.TYPE_SLICE_END:
            check(open_slices[e.track_uuid], "a slice end without a begin")
            check(open_slices[e.track_uuid].pop() <= p.timestamp, "a slice ends before it begins")
        elif e.type == pb.TrackEvent.TYPE_INSTANT:
            got["instants"] += 1
        elif e.type == pb.TrackEvent.TYPE_COUNTER:
            if e.track_uuid in memory_tracks:
                got["memory"] += 1
            else:
                check(e.track_uuid in counter_tracks, "a counter value on a track that is not a counter")
                got["counters"] += 1
    check(all(not v for v in open_slices.values()), "slices left open")
    check(flows_out == flows_in and all(n == 1 for n in flows_out.values()), "flows without both ends")
    got["flows"] = len(flows_out)
    return dict(got)


# ---- flamegraph, diff ----------------------------------------------------------------------

def read_folded(path):
    total = 0
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            check(stack and n.isdigit(), f"not a folded-stack line: {line[:80]!r}")
            total += int(n)
    return {"samples": total}


def read_diff_json(text):
    """`diff A A`: the same trace on both sides, so every change is zero."""
    d = json.loads(text)
    check(isinstance(d, dict), "the diff is not a JSON object")
    check(d.get("a") == d.get("b"), f"diff A A: the two sides differ: {d.get('a')} vs {d.get('b')}")
    check(not d.get("step_delta_ns"), f"diff A A: step time changed by {d.get('step_delta_ns')} ns")

    def deltas(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k.startswith("delta") and isinstance(v, (int, float)):
                    yield v
                yield from deltas(v)
        elif isinstance(x, list):
            for v in x:
                yield from deltas(v)
    nonzero = [v for v in deltas(d) if v]
    check(not nonzero, f"diff A A: {len(nonzero)} nonzero deltas")
    return {}


# ---- babeltrace2 on strata's own CTF ----------------------------------------------------------

# CTF event -> the level it counts one of, where the importer keeps them 1:1.
BABELTRACE_LEVELS = {"cpu_sample": "samples", "sys_enter": "syscalls", "page_fault": "page_faults",
                     "block_issue": "block_io"}


def babeltrace_counts(ctf_dir):
    """Event names babeltrace2 reads from a strata trace, counted; raises Skip without babeltrace2."""
    try:
        out = subprocess.run(["babeltrace2", "--no-delta", "--names=none", ctf_dir], capture_output=True, text=True,
                             timeout=300)
    except FileNotFoundError:
        raise Skip("babeltrace2 is not installed")
    check(out.returncode == 0, "babeltrace2 failed: " + out.stderr.strip()[-300:])
    names = collections.Counter()
    for line in out.stdout.splitlines():
        m = re.match(r"\[[^\]]*\] (?:\S+ )?([A-Za-z0-9_.]+): ", line)
        if m:
            names[m.group(1)] += 1
    return names
