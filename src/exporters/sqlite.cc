// SQLite writer: one table per model table, names inline (no string ids), so
// that ad-hoc SQL needs no joins for the common questions. The schema is
// documented in docs/sqlite-schema.md; bump kSchemaVersion when it changes.
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>

#include "base/error.h"
#include "exporters/export.h"
#include "exporters/view.h"

namespace strata::exporters {
namespace {

constexpr int kSchemaVersion = 2;

constexpr const char* kSchema = R"sql(
CREATE TABLE metadata (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE processes (id INTEGER PRIMARY KEY, pid INTEGER, name TEXT, cmdline TEXT, rank INTEGER,
                        is_device INTEGER, device INTEGER);
CREATE TABLE devices (id INTEGER PRIMARY KEY, name TEXT, vendor TEXT, memory_bytes INTEGER, compute_units INTEGER,
                      compute_major INTEGER, compute_minor INTEGER);
CREATE TABLE tracks (id INTEGER PRIMARY KEY, process_id INTEGER REFERENCES processes(id), kind TEXT, tid INTEGER,
                     name TEXT, device INTEGER, events INTEGER, lost INTEGER);
CREATE TABLE slices (id INTEGER PRIMARY KEY, track_id INTEGER REFERENCES tracks(id), ts INTEGER, dur INTEGER,
                     name TEXT, kind TEXT, depth INTEGER, parent_id INTEGER, arg INTEGER);
CREATE TABLE device_activity (slice_id INTEGER PRIMARY KEY REFERENCES slices(id), device INTEGER, stream INTEGER,
                              correlation INTEGER, launch_slice_id INTEGER REFERENCES slices(id), bytes INTEGER,
                              copy_kind TEXT, pinned INTEGER, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
                              block_x INTEGER, block_y INTEGER, block_z INTEGER, shared_mem INTEGER,
                              registers INTEGER, occupancy REAL);
CREATE TABLE args (slice_id INTEGER REFERENCES slices(id), key TEXT, str_value TEXT, num_value REAL);
CREATE TABLE ops (slice_id INTEGER PRIMARY KEY REFERENCES slices(id), scope TEXT, seq INTEGER,
                  forward_slice_id INTEGER REFERENCES slices(id), shapes TEXT, dtypes TEXT, flops INTEGER, bytes INTEGER,
                  site TEXT);
CREATE TABLE dataflow_edges (from_slice_id INTEGER REFERENCES slices(id), to_slice_id INTEGER REFERENCES slices(id),
                             tensor INTEGER);
CREATE TABLE instants (id INTEGER PRIMARY KEY, track_id INTEGER REFERENCES tracks(id), ts INTEGER, name TEXT);
CREATE TABLE counter_series (id INTEGER PRIMARY KEY, process_id INTEGER REFERENCES processes(id),
                             track_id INTEGER REFERENCES tracks(id), name TEXT, unit TEXT);
CREATE TABLE counters (series_id INTEGER REFERENCES counter_series(id), ts INTEGER, value REAL);
CREATE TABLE flows (id INTEGER PRIMARY KEY, kind TEXT, from_slice_id INTEGER REFERENCES slices(id),
                    to_slice_id INTEGER REFERENCES slices(id));
CREATE TABLE memory (ts INTEGER, track_id INTEGER REFERENCES tracks(id), device INTEGER, addr INTEGER, bytes INTEGER,
                     total_allocated INTEGER, total_reserved INTEGER,
                     layer TEXT);  -- 'allocator' (the framework's blocks) or 'runtime' (cudaMalloc and module statics)
CREATE TABLE syscalls (id INTEGER PRIMARY KEY, track_id INTEGER REFERENCES tracks(id), ts INTEGER, dur INTEGER,
                       name TEXT, nr INTEGER, ret INTEGER, returned INTEGER);
CREATE TABLE stack_frames (id INTEGER PRIMARY KEY, function TEXT, module TEXT, kind TEXT, pc INTEGER, line INTEGER);
CREATE TABLE callsites (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES callsites(id),
                        frame_id INTEGER REFERENCES stack_frames(id), depth INTEGER);
CREATE TABLE thread_states (id INTEGER PRIMARY KEY, track_id INTEGER REFERENCES tracks(id), ts INTEGER, dur INTEGER,
                            state TEXT, cpu INTEGER, syscall_id INTEGER REFERENCES syscalls(id),
                            waker_track_id INTEGER REFERENCES tracks(id), callsite_id INTEGER REFERENCES callsites(id));
CREATE TABLE cpu_samples (id INTEGER PRIMARY KEY, track_id INTEGER REFERENCES tracks(id), ts INTEGER, cpu INTEGER,
                          callsite_id INTEGER REFERENCES callsites(id));
CREATE TABLE page_faults (ts INTEGER, track_id INTEGER REFERENCES tracks(id), addr INTEGER,
                          callsite_id INTEGER REFERENCES callsites(id));
CREATE TABLE block_io (ts INTEGER, track_id INTEGER REFERENCES tracks(id), dev INTEGER, sector INTEGER, bytes INTEGER,
                       rwbs TEXT);
CREATE TABLE not_recorded (process TEXT, collector TEXT, state TEXT, detail TEXT);
CREATE TABLE warnings (message TEXT);
)sql";

constexpr const char* kIndexesAndViews = R"sql(
CREATE INDEX slices_track_ts ON slices(track_id, ts);
CREATE INDEX slices_name ON slices(name);
CREATE INDEX args_slice ON args(slice_id);
CREATE INDEX device_activity_launch ON device_activity(launch_slice_id);
CREATE VIEW kernels AS
  SELECT s.id, s.ts, s.dur, s.name, d.device, d.stream, d.correlation, d.launch_slice_id,
         d.grid_x, d.grid_y, d.grid_z, d.block_x, d.block_y, d.block_z, d.shared_mem, d.registers, d.occupancy
  FROM slices s JOIN device_activity d ON d.slice_id = s.id WHERE s.kind = 'kernel';
CREATE VIEW transfers AS
  SELECT s.id, s.ts, s.dur, s.name, s.kind, d.device, d.stream, d.bytes, d.copy_kind, d.pinned,
         CASE WHEN s.dur > 0 THEN CAST(d.bytes AS REAL) / s.dur END AS gbps
  FROM slices s JOIN device_activity d ON d.slice_id = s.id WHERE s.kind IN ('memcpy', 'memset');
CREATE INDEX syscalls_track_ts ON syscalls(track_id, ts);
CREATE INDEX thread_states_track_ts ON thread_states(track_id, ts);
CREATE INDEX cpu_samples_track_ts ON cpu_samples(track_id, ts);
CREATE INDEX flows_from ON flows(from_slice_id);
CREATE INDEX flows_to ON flows(to_slice_id);
CREATE VIEW steps AS
  SELECT id AS slice_id, track_id, ts, dur, arg AS number, name FROM slices WHERE kind = 'step';
CREATE VIEW modules AS
  SELECT id AS slice_id, track_id, ts, dur, name, depth, parent_id FROM slices WHERE kind = 'module';
CREATE VIEW context_switches AS
  SELECT id AS thread_state_id, track_id, ts, dur, cpu FROM thread_states WHERE state = 'running';
CREATE VIEW sample_frames AS
  SELECT s.id AS sample_id, s.ts, s.track_id, s.cpu, f.function, f.module, f.kind, f.line
  FROM cpu_samples s JOIN callsites c ON c.id = s.callsite_id JOIN stack_frames f ON f.id = c.frame_id;
CREATE VIEW launches AS
  SELECT l.id AS launch_slice_id, l.name AS api, l.ts AS api_ts, l.dur AS api_dur,
         s.id AS slice_id, s.name AS name, s.kind AS kind, s.ts AS ts, s.dur AS dur,
         s.ts - (l.ts + l.dur) AS delay
  FROM device_activity d JOIN slices s ON s.id = d.slice_id JOIN slices l ON l.id = d.launch_slice_id;
)sql";

class Db {
 public:
  ~Db() {
    for (sqlite3_stmt* s : stmts_) sqlite3_finalize(s);
    if (db_) sqlite3_close(db_);
  }
  Status Open(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) return Err(StatusCode::kIoError, "sqlite: open {}: {}", path, Msg());
    return Exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA page_size = 65536;");
  }
  Status Exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      Status s = Err(StatusCode::kIoError, "sqlite: {}", err ? err : "error");
      sqlite3_free(err);
      return s;
    }
    return OkStatus();
  }
  StatusOr<sqlite3_stmt*> Prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) return Err(StatusCode::kInternal, "sqlite: {}", Msg());
    stmts_.push_back(s);
    return s;
  }
  Status Step(sqlite3_stmt* s) {
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return Err(StatusCode::kIoError, "sqlite: {}", Msg());
    return OkStatus();
  }
  std::string Msg() const { return db_ ? sqlite3_errmsg(db_) : "out of memory"; }

 private:
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> stmts_;
};

void BindText(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
void BindInt(sqlite3_stmt* s, int i, int64_t v) { sqlite3_bind_int64(s, i, v); }
void BindOptInt(sqlite3_stmt* s, int i, int64_t v, bool present) {
  if (present) sqlite3_bind_int64(s, i, v);
  else sqlite3_bind_null(s, i);
}

Status WriteOs(Db& db, const model::Trace& t, ExportStats& st);

Status Write(Db& db, const model::Trace& t, const ExportView& v, ExportStats& st) {
  STRATA_RETURN_IF_ERROR(db.Exec(kSchema));
  STRATA_RETURN_IF_ERROR(db.Exec("BEGIN"));
  auto sv = [&t](model::StringId id) { return t.strings.Get(id); };
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO metadata VALUES (?, ?)"));
    std::pair<std::string, std::string> rows[] = {{"schema_version", std::to_string(kSchemaVersion)},
                                                 {"source", t.source},
                                                 {"path", t.path},
                                                 {"hostname", t.hostname},
                                                 {"clock_offset_ns", std::to_string(t.clock_offset_ns)},
                                                 {"events_read", std::to_string(t.events_read)},
                                                 {"events_lost", std::to_string(t.events_lost)},
                                                 {"time_unit", "ns"},
                                                 {"command", v.command},
                                                 {"exit_status", v.exit_status},
                                                 {"kernel", v.kernel}};
    for (auto& [key, value] : rows) {
      BindText(s, 1, key);
      BindText(s, 2, value);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO processes VALUES (?, ?, ?, ?, ?, ?, ?)"));
    for (size_t i = 0; i < t.processes.size(); ++i) {
      const auto& p = t.processes[i];
      BindInt(s, 1, static_cast<int64_t>(i));
      BindInt(s, 2, p.pid);
      BindText(s, 3, sv(p.name));
      BindText(s, 4, sv(p.cmdline));
      BindOptInt(s, 5, p.rank, p.rank >= 0);
      BindInt(s, 6, p.is_device);
      BindOptInt(s, 7, p.device, p.device != model::kNone);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO devices VALUES (?, ?, ?, ?, ?, ?, ?)"));
    for (const auto& d : t.devices) {
      BindInt(s, 1, d.id);
      BindText(s, 2, d.name);
      BindText(s, 3, d.vendor);
      BindInt(s, 4, static_cast<int64_t>(d.memory_bytes));
      BindInt(s, 5, d.compute_units);
      BindInt(s, 6, d.compute_major);
      BindInt(s, 7, d.compute_minor);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO tracks VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    for (size_t i = 0; i < t.tracks.size(); ++i) {
      const auto& k = t.tracks[i];
      BindInt(s, 1, static_cast<int64_t>(i));
      BindOptInt(s, 2, k.process, k.process < t.processes.size());
      BindText(s, 3, k.kind == model::TrackKind::kThread ? "thread" : k.kind == model::TrackKind::kDeviceQueue ? "device_queue" : "cpu");
      BindInt(s, 4, k.tid);
      BindText(s, 5, sv(k.name));
      BindOptInt(s, 6, k.device, k.device != model::kNone);
      BindInt(s, 7, static_cast<int64_t>(k.events));
      BindInt(s, 8, static_cast<int64_t>(k.lost));
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO slices VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    const auto& sl = t.slices;
    for (size_t i = 0; i < sl.size(); ++i) {
      BindInt(s, 1, static_cast<int64_t>(i));
      BindInt(s, 2, sl.track[i]);
      BindInt(s, 3, sl.ts[i]);
      BindInt(s, 4, sl.dur[i]);
      BindText(s, 5, sv(sl.name[i]));
      BindText(s, 6, model::SliceKindName(sl.kind[i]));
      BindInt(s, 7, sl.depth[i]);
      BindOptInt(s, 8, sl.parent[i], sl.parent[i] != model::kNone);
      BindOptInt(s, 9, static_cast<int64_t>(sl.arg[i]), sl.arg[i] != 0);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
    st.slices = sl.size();
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                            db.Prepare("INSERT INTO device_activity VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    const auto& d = t.device;
    for (size_t r = 0; r < d.size(); ++r) {
      BindInt(s, 1, d.slice[r]);
      BindInt(s, 2, d.device[r]);
      BindInt(s, 3, d.stream[r]);
      BindOptInt(s, 4, static_cast<int64_t>(d.correlation[r]), d.correlation[r] != 0);
      BindOptInt(s, 5, d.launch[r], d.launch[r] != model::kNone);
      BindInt(s, 6, static_cast<int64_t>(d.bytes[r]));
      BindText(s, 7, model::CopyKindName(d.copy_kind[r]));
      BindOptInt(s, 8, d.pinned[r], d.pinned[r] >= 0);
      for (int k = 0; k < 3; ++k) BindInt(s, 9 + k, d.grid[r][static_cast<size_t>(k)]);
      for (int k = 0; k < 3; ++k) BindInt(s, 12 + k, d.block[r][static_cast<size_t>(k)]);
      BindInt(s, 15, d.shared_mem[r]);
      BindInt(s, 16, d.registers[r]);
      if (d.occupancy[r] >= 0) sqlite3_bind_double(s, 17, d.occupancy[r]);
      else sqlite3_bind_null(s, 17);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO args VALUES (?, ?, ?, ?)"));
    const auto& a = t.args;
    for (size_t i = 0; i < a.size(); ++i) {
      BindInt(s, 1, a.slice[i]);
      BindText(s, 2, sv(a.key[i]));
      if (a.str[i]) BindText(s, 3, sv(a.str[i]));
      else sqlite3_bind_null(s, 3);
      if (!std::isnan(a.num[i])) sqlite3_bind_double(s, 4, a.num[i]);
      else sqlite3_bind_null(s, 4);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO instants VALUES (?, ?, ?, ?)"));
    for (size_t i = 0; i < t.instants.size(); ++i) {
      BindInt(s, 1, static_cast<int64_t>(i));
      BindInt(s, 2, t.instants.track[i]);
      BindInt(s, 3, t.instants.ts[i]);
      BindText(s, 4, sv(t.instants.name[i]));
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
    st.instants = t.instants.size();
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO counter_series VALUES (?, ?, ?, ?, ?)"));
    for (size_t i = 0; i < t.counter_series.size(); ++i) {
      const auto& c = t.counter_series[i];
      BindInt(s, 1, static_cast<int64_t>(i));
      BindOptInt(s, 2, c.process, c.process < t.processes.size());
      BindOptInt(s, 3, c.track, c.track >= 0);
      BindText(s, 4, sv(c.name));
      BindText(s, 5, sv(c.unit));
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * c, db.Prepare("INSERT INTO counters VALUES (?, ?, ?)"));
    for (size_t i = 0; i < t.counters.size(); ++i) {
      BindInt(c, 1, t.counters.series[i]);
      BindInt(c, 2, t.counters.ts[i]);
      sqlite3_bind_double(c, 3, t.counters.value[i]);
      STRATA_RETURN_IF_ERROR(db.Step(c));
    }
    st.counter_samples = t.counters.size();
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO flows VALUES (?, ?, ?, ?)"));
    for (size_t i = 0; i < v.flows.size(); ++i) {
      BindInt(s, 1, static_cast<int64_t>(i));
      BindText(s, 2, FlowKindName(v.flows[i].kind));
      BindInt(s, 3, v.flows[i].from);
      BindInt(s, 4, v.flows[i].to);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
    st.flows = v.flows.size();
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO ops VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    const auto& o = t.ops;
    for (size_t i = 0; i < o.size(); ++i) {
      BindInt(s, 1, o.slice[i]);
      BindText(s, 2, model::OpScopeName(o.scope[i]));
      BindOptInt(s, 3, o.seq[i], o.seq[i] >= 0);
      BindOptInt(s, 4, o.forward[i], o.forward[i] >= 0);
      if (o.shapes[i]) BindText(s, 5, sv(o.shapes[i]));
      else sqlite3_bind_null(s, 5);
      if (o.dtypes[i]) BindText(s, 6, sv(o.dtypes[i]));
      else sqlite3_bind_null(s, 6);
      BindOptInt(s, 7, o.flops[i], o.flops[i] >= 0);
      BindOptInt(s, 8, o.bytes[i], o.bytes[i] >= 0);
      if (o.site[i]) BindText(s, 9, sv(o.site[i]));
      else sqlite3_bind_null(s, 9);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * e, db.Prepare("INSERT INTO dataflow_edges VALUES (?, ?, ?)"));
    for (size_t i = 0; i < t.edges.size(); ++i) {
      BindOptInt(e, 1, t.edges.from[i], t.edges.from[i] >= 0);
      BindOptInt(e, 2, t.edges.to[i], t.edges.to[i] >= 0);
      BindInt(e, 3, static_cast<int64_t>(t.edges.tensor[i]));
      STRATA_RETURN_IF_ERROR(db.Step(e));
    }
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO memory VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    const auto& m = t.memory;
    for (size_t i = 0; i < m.size(); ++i) {
      BindInt(s, 1, m.ts[i]);
      BindInt(s, 2, m.track[i]);
      BindOptInt(s, 3, m.device[i], m.device[i] != model::kNone);
      BindInt(s, 4, static_cast<int64_t>(m.addr[i]));
      BindInt(s, 5, m.bytes[i]);
      BindOptInt(s, 6, m.total_allocated[i], m.total_allocated[i] >= 0);
      BindOptInt(s, 7, m.total_reserved[i], m.total_reserved[i] >= 0);
      BindText(s, 8, model::MemoryLayerName(m.layer[i]));
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
    st.memory_events = m.size();
  }
  STRATA_RETURN_IF_ERROR(WriteOs(db, t, st));
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO not_recorded VALUES (?, ?, ?, ?)"));
    for (const NotRecorded& n : v.not_recorded) {
      BindText(s, 1, n.process);
      BindText(s, 2, n.collector);
      BindText(s, 3, n.state);
      BindText(s, 4, n.detail);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
    st.not_recorded = v.not_recorded.size();
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO warnings VALUES (?)"));
    for (const auto& w : t.warnings) {
      BindText(s, 1, w);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
  }
  STRATA_RETURN_IF_ERROR(db.Exec(kIndexesAndViews));
  return db.Exec("COMMIT");
}

// The OS level: system calls, stacks (frames and callsites), thread states,
// CPU samples, page faults, block requests.
Status WriteOs(Db& db, const model::Trace& t, ExportStats& st) {
  auto sv = [&t](model::StringId id) { return t.strings.Get(id); };
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO syscalls VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    const auto& c = t.syscalls;
    for (size_t i = 0; i < c.size(); ++i) {
      BindInt(s, 1, static_cast<int64_t>(i));
      BindInt(s, 2, c.track[i]);
      BindInt(s, 3, c.ts[i]);
      BindInt(s, 4, c.dur[i]);
      BindText(s, 5, sv(c.name[i]));
      BindInt(s, 6, c.nr[i]);
      BindOptInt(s, 7, c.ret[i], c.returned[i] != 0);
      BindInt(s, 8, c.returned[i]);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
    st.syscalls = c.size();
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO stack_frames VALUES (?, ?, ?, ?, ?, ?)"));
    const auto& f = t.frames;
    for (size_t i = 0; i < f.size(); ++i) {
      BindInt(s, 1, static_cast<int64_t>(i));
      BindText(s, 2, sv(f.function[i]));
      BindText(s, 3, sv(f.module[i]));
      BindText(s, 4, model::FrameKindName(f.kind[i]));
      BindOptInt(s, 5, static_cast<int64_t>(f.pc[i]), f.kind[i] != model::FrameKind::kPython);
      BindOptInt(s, 6, f.line[i], f.line[i] != 0);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * c, db.Prepare("INSERT INTO callsites VALUES (?, ?, ?, ?)"));
    const auto& cs = t.callsites;
    for (size_t i = 0; i < cs.size(); ++i) {
      BindInt(c, 1, static_cast<int64_t>(i));
      BindOptInt(c, 2, cs.parent[i], cs.parent[i] >= 0);
      BindInt(c, 3, cs.frame[i]);
      BindInt(c, 4, cs.depth[i]);
      STRATA_RETURN_IF_ERROR(db.Step(c));
    }
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO thread_states VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    const auto& x = t.thread_states;
    for (size_t i = 0; i < x.size(); ++i) {
      BindInt(s, 1, static_cast<int64_t>(i));
      BindInt(s, 2, x.track[i]);
      BindInt(s, 3, x.ts[i]);
      BindInt(s, 4, x.dur[i]);
      BindText(s, 5, model::ThreadStateName(x.state[i]));
      BindOptInt(s, 6, x.cpu[i], x.cpu[i] >= 0);
      BindOptInt(s, 7, x.syscall[i], x.syscall[i] >= 0);
      BindOptInt(s, 8, x.waker[i], x.waker[i] >= 0);
      BindOptInt(s, 9, x.callsite[i], x.callsite[i] >= 0);
      STRATA_RETURN_IF_ERROR(db.Step(s));
      st.context_switches += x.state[i] == model::ThreadState::kRunning;
    }
    st.thread_states = x.size();
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO cpu_samples VALUES (?, ?, ?, ?, ?)"));
    const auto& x = t.cpu_samples;
    for (size_t i = 0; i < x.size(); ++i) {
      BindInt(s, 1, static_cast<int64_t>(i));
      BindInt(s, 2, x.track[i]);
      BindInt(s, 3, x.ts[i]);
      BindOptInt(s, 4, x.cpu[i], x.cpu[i] >= 0);
      BindOptInt(s, 5, x.callsite[i], x.callsite[i] >= 0);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
    st.samples = x.size();
  }
  {
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO page_faults VALUES (?, ?, ?, ?)"));
    const auto& x = t.page_faults;
    for (size_t i = 0; i < x.size(); ++i) {
      BindInt(s, 1, x.ts[i]);
      BindInt(s, 2, x.track[i]);
      BindInt(s, 3, static_cast<int64_t>(x.addr[i]));
      BindOptInt(s, 4, x.callsite[i], x.callsite[i] >= 0);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * b, db.Prepare("INSERT INTO block_io VALUES (?, ?, ?, ?, ?, ?)"));
    const auto& y = t.block_io;
    for (size_t i = 0; i < y.size(); ++i) {
      BindInt(b, 1, y.ts[i]);
      BindInt(b, 2, y.track[i]);
      BindInt(b, 3, y.dev[i]);
      BindInt(b, 4, static_cast<int64_t>(y.sector[i]));
      BindInt(b, 5, y.bytes[i]);
      BindText(b, 6, sv(y.rwbs[i]));
      STRATA_RETURN_IF_ERROR(db.Step(b));
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<ExportStats> ExportSqlite(const model::Trace& t, const std::string& path) {
  ExportView view = BuildView(t);
  std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  ExportStats st;
  Status s;
  {
    Db db;
    s = db.Open(tmp);
    if (s.ok()) s = Write(db, t, view, st);
  }
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) s = ErrnoErr(errno, "rename {} to {}", tmp, path);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s.WithContext(path);
  }
  return st;
}

}  // namespace strata::exporters
