// SQLite writer: one table per model table, names inline (no string ids), so
// that ad-hoc SQL needs no joins for the common questions. The schema is
// documented in docs/sqlite-schema.md; bump kSchemaVersion when it changes.
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>

#include "base/error.h"
#include "exporters/export.h"

namespace strata::exporters {
namespace {

constexpr int kSchemaVersion = 1;

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
CREATE TABLE instants (id INTEGER PRIMARY KEY, track_id INTEGER REFERENCES tracks(id), ts INTEGER, name TEXT);
CREATE TABLE counter_series (id INTEGER PRIMARY KEY, process_id INTEGER REFERENCES processes(id), name TEXT, unit TEXT);
CREATE TABLE counters (series_id INTEGER REFERENCES counter_series(id), ts INTEGER, value REAL);
CREATE TABLE flows (id INTEGER, from_slice_id INTEGER REFERENCES slices(id), to_slice_id INTEGER REFERENCES slices(id));
CREATE TABLE memory (ts INTEGER, track_id INTEGER REFERENCES tracks(id), device INTEGER, addr INTEGER, bytes INTEGER,
                     total_allocated INTEGER, total_reserved INTEGER,
                     layer TEXT);  -- 'allocator' (the framework's blocks) or 'runtime' (cudaMalloc and module statics)
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

Status Write(Db& db, const model::Trace& t, ExportStats& st) {
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
                                                 {"time_unit", "ns"}};
    for (auto& [k, v] : rows) {
      BindText(s, 1, k);
      BindText(s, 2, v);
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
      BindInt(s, 2, k.process);
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
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO counter_series VALUES (?, ?, ?, ?)"));
    for (size_t i = 0; i < t.counter_series.size(); ++i) {
      BindInt(s, 1, static_cast<int64_t>(i));
      BindInt(s, 2, t.counter_series[i].process);
      BindText(s, 3, sv(t.counter_series[i].name));
      BindText(s, 4, sv(t.counter_series[i].unit));
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
    STRATA_ASSIGN_OR_RETURN(sqlite3_stmt * s, db.Prepare("INSERT INTO flows VALUES (?, ?, ?)"));
    for (size_t i = 0; i < t.flows.size(); ++i) {
      BindInt(s, 1, static_cast<int64_t>(t.flows.id[i]));
      BindOptInt(s, 2, t.flows.from[i], t.flows.from[i] >= 0);
      BindOptInt(s, 3, t.flows.to[i], t.flows.to[i] >= 0);
      STRATA_RETURN_IF_ERROR(db.Step(s));
    }
    st.flows = t.flows.size();
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

}  // namespace

StatusOr<ExportStats> ExportSqlite(const model::Trace& t, const std::string& path) {
  std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  ExportStats st;
  Status s;
  {
    Db db;
    s = db.Open(tmp);
    if (s.ok()) s = Write(db, t, st);
  }
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) s = ErrnoErr(errno, "rename {} to {}", tmp, path);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s.WithContext(path);
  }
  return st;
}

}  // namespace strata::exporters
