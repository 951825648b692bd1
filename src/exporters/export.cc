#include "exporters/export.h"

namespace strata::exporters {

bool ParseExportFormat(const std::string& s, ExportFormat* f) {
  if (s == "perfetto") *f = ExportFormat::kPerfetto;
  else if (s == "chrome-json" || s == "json") *f = ExportFormat::kChromeJson;
  else if (s == "sqlite") *f = ExportFormat::kSqlite;
  else return false;
  return true;
}

StatusOr<ExportStats> ExportTrace(const model::Trace& t, ExportFormat f, const std::string& path) {
  switch (f) {
    case ExportFormat::kPerfetto: return ExportPerfetto(t, path);
    case ExportFormat::kChromeJson: return ExportChromeJson(t, path);
    case ExportFormat::kSqlite: return ExportSqlite(t, path);
  }
  return ExportPerfetto(t, path);
}

}  // namespace strata::exporters
