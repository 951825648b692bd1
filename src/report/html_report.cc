#include "report/html_report.h"

namespace strata::report {

extern const char kReportJs[];
extern const char kReportCss[];

namespace {

std::string EscapeHtml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::string RenderHtml(const nlohmann::json& report, const std::string& title) {
  // The data travels inside a script element: "</" must not close it early.
  std::string data = report.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] == '<' && i + 1 < data.size() && data[i + 1] == '/') {
      safe += "<\\/";
      ++i;
    } else {
      safe.push_back(data[i]);
    }
  }
  std::string html;
  html.reserve(safe.size() + 64 * 1024);
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + EscapeHtml(title) + "</title>\n<style>\n";
  html += kReportCss;
  html += "</style>\n</head>\n<body>\n<header id=\"strata-header\"></header>\n<main id=\"strata-main\"></main>\n";
  html += "<script type=\"application/json\" id=\"strata-data\">";
  html += safe;
  html += "</script>\n<script>\n";
  html += kReportJs;
  html += "</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace strata::report
