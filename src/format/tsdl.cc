#include "format/tsdl.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <cstdio>
#include <random>
#include <unordered_map>

#include "base/error.h"

namespace strata::format {
namespace {

const char* TypeName(FieldType t) {
  switch (t) {
    case FieldType::kU8: return "uint8_t";
    case FieldType::kU16: return "uint16_t";
    case FieldType::kU32: return "uint32_t";
    case FieldType::kU64: return "uint64_t";
    case FieldType::kI16: return "int16_t";
    case FieldType::kI32: return "int32_t";
    case FieldType::kI64: return "int64_t";
    case FieldType::kF64: return "double_t";
    case FieldType::kString: return "string";
  }
  return "?";
}

constexpr const char* kPreamble = R"(/* CTF 1.8 */

typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 16; align = 8; signed = false; } := uint16_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
typealias integer { size = 16; align = 8; signed = true; } := int16_t;
typealias integer { size = 32; align = 8; signed = true; } := int32_t;
typealias integer { size = 64; align = 8; signed = true; } := int64_t;
typealias integer { size = 5; align = 1; signed = false; } := uint5_t;
typealias floating_point { exp_dig = 11; mant_dig = 53; align = 8; } := double_t;
typealias integer { size = 27; align = 1; signed = false; map = clock.monotonic.value; } := uint27_clock_monotonic_t;
typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_monotonic_t;
)";

}  // namespace

std::string UuidToString(const Uuid& u) {
  char buf[37];
  std::snprintf(buf, sizeof buf, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return buf;
}

Uuid NewRandomUuid() {
  Uuid u{};
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  bool ok = fd >= 0 && ::read(fd, u.data(), u.size()) == static_cast<ssize_t>(u.size());
  if (fd >= 0) ::close(fd);
  if (!ok) {
    std::random_device rd;
    for (auto& b : u) b = static_cast<uint8_t>(rd());
  }
  u[6] = static_cast<uint8_t>((u[6] & 0x0f) | 0x40);  // version 4
  u[8] = static_cast<uint8_t>((u[8] & 0x3f) | 0x80);  // RFC 4122 variant
  return u;
}

std::string GenerateMetadata(const TraceIdentity& id) {
  std::string m = kPreamble;
  std::string uuid = UuidToString(id.uuid);
  m += "\ntrace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"" + uuid + "\";\n\tbyte_order = le;\n";
  m += "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n\t\tuint32_t stream_id;\n"
       "\t\tuint64_t stream_instance_id;\n\t};\n};\n\n";
  std::string host;
  for (char c : id.hostname)
    if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) host.push_back(c);
  m += "env {\n\tdomain = \"strata\";\n\ttracer_name = \"strata\";\n";
  m += "\tstrata_schema_major = " + std::to_string(kSchemaMajor) + ";\n";
  m += "\tstrata_schema_minor = " + std::to_string(kSchemaMinor) + ";\n";
  m += "\thostname = \"" + host + "\";\n};\n\n";
  int64_t off = id.clock_offset_ns;
  int64_t off_s = off >= 0 ? off / 1000000000 : -((-off + 999999999) / 1000000000);
  int64_t off_ns = off - off_s * 1000000000;
  m += "clock {\n\tname = \"monotonic\";\n\tuuid = \"" + uuid + "\";\n";
  m += "\tdescription = \"CLOCK_MONOTONIC\";\n\tfreq = 1000000000;\n\tprecision = 1;\n";
  m += "\toffset_s = " + std::to_string(off_s) + ";\n\toffset = " + std::to_string(off_ns) + ";\n";
  m += "\tabsolute = FALSE;\n};\n";
  for (const StreamSpec& s : Streams()) {
    m += "\n/* stream class: " + std::string(s.name) + " */\nstream {\n\tid = " + std::to_string(s.id) + ";\n";
    m += "\tpacket.context := struct {\n"
         "\t\tuint64_clock_monotonic_t timestamp_begin;\n\t\tuint64_clock_monotonic_t timestamp_end;\n"
         "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n\t\tuint64_t packet_seq_num;\n"
         "\t\tuint64_t events_discarded;\n";
    for (const FieldSpec& f : s.context) m += "\t\t" + std::string(TypeName(f.type)) + " " + std::string(f.name) + ";\n";
    m += "\t};\n";
    m += "\tevent.header := struct {\n\t\tenum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n"
         "\t\tvariant <id> {\n\t\t\tstruct { uint27_clock_monotonic_t timestamp; } compact;\n"
         "\t\t\tstruct { uint32_t id; uint64_clock_monotonic_t timestamp; } extended;\n\t\t} v;\n\t} align(8);\n};\n";
    for (const EventSpec& e : s.events) {
      m += "\nevent {\n\tname = \"" + std::string(e.name) + "\";\n\tid = " + std::to_string(e.id) +
           ";\n\tstream_id = " + std::to_string(s.id) + ";\n\tfields := struct {\n";
      for (const FieldSpec& f : e.fields)
        m += "\t\t" + std::string(TypeName(f.type)) + " " + std::string(f.name) + ";\n";
      m += "\t};\n};\n";
    }
  }
  return m;
}

// ---------------------------------------------------------------------------
// Parser for the generated subset.

namespace {

struct Token {
  enum Kind { kIdent, kNumber, kString, kPunct, kEnd } kind;
  std::string_view text;
  size_t offset;
};

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  StatusOr<Token> Next() {
    SkipSpaceAndComments();
    if (!error_.ok()) return error_;
    if (pos_ >= s_.size()) return Token{Token::kEnd, {}, pos_};
    size_t start = pos_;
    char c = s_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
      return Token{Token::kIdent, s_.substr(start, pos_ - start), start};
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-') {
      ++pos_;
      while (pos_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      return Token{Token::kNumber, s_.substr(start, pos_ - start), start};
    }
    if (c == '"') {
      ++pos_;
      while (pos_ < s_.size() && s_[pos_] != '"') {
        if (s_[pos_] == '\\') ++pos_;
        ++pos_;
      }
      if (pos_ >= s_.size()) return Err(StatusCode::kCorrupt, "metadata: byte {}: unterminated string", start);
      ++pos_;
      return Token{Token::kString, s_.substr(start + 1, pos_ - start - 2), start};
    }
    if (c == ':' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '=') {
      pos_ += 2;
      return Token{Token::kPunct, s_.substr(start, 2), start};
    }
    if (c == '.' && s_.substr(pos_, 3) == "...") {
      pos_ += 3;
      return Token{Token::kPunct, s_.substr(start, 3), start};
    }
    if (std::strchr("{}[]();=<>,.:", c)) {
      ++pos_;
      return Token{Token::kPunct, s_.substr(start, 1), start};
    }
    return Err(StatusCode::kCorrupt, "metadata: byte {}: unexpected character 0x{:02x}", start,
               static_cast<unsigned>(static_cast<unsigned char>(c)));
  }

 private:
  void SkipSpaceAndComments() {
    for (;;) {
      while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (s_.substr(pos_, 2) == "/*") {
        size_t end = s_.find("*/", pos_ + 2);
        if (end == std::string_view::npos) {
          error_ = Err(StatusCode::kCorrupt, "metadata: byte {}: unterminated comment", pos_);
          return;
        }
        pos_ = end + 2;
      } else if (s_.substr(pos_, 2) == "//") {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  Status error_;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text), lex_(text) {}

  StatusOr<ParsedMetadata> Parse() {
    if (text_.substr(0, 12) != "/* CTF 1.8 *")
      return Err(StatusCode::kCorrupt, "metadata: byte 0: missing '/* CTF 1.8 */' signature (not a CTF 1.8 text metadata file)");
    STRATA_RETURN_IF_ERROR(Advance());
    while (tok_.kind != Token::kEnd) {
      if (Is("typealias")) {
        STRATA_RETURN_IF_ERROR(ParseTypealias());
      } else if (Is("trace")) {
        STRATA_RETURN_IF_ERROR(ParseTrace());
      } else if (Is("env")) {
        STRATA_RETURN_IF_ERROR(ParseEnv());
      } else if (Is("clock")) {
        STRATA_RETURN_IF_ERROR(ParseClock());
      } else if (Is("stream")) {
        STRATA_RETURN_IF_ERROR(ParseStream());
      } else if (Is("event")) {
        STRATA_RETURN_IF_ERROR(ParseEvent());
      } else {
        return Unexpected("a top-level block (typealias, trace, env, clock, stream, event)");
      }
    }
    if (!saw_trace_) return Err(StatusCode::kCorrupt, "metadata: no trace block");
    if (md_.major == 0) return Err(StatusCode::kUnsupported, "metadata: not a strata trace (no strata_schema_major in env)");
    if (md_.major != kSchemaMajor)
      return Err(StatusCode::kUnsupported, "metadata: strata schema {}.{} (this strata reads {}.x)", md_.major,
                 md_.minor, kSchemaMajor);
    return std::move(md_);
  }

 private:
  bool Is(std::string_view s) const { return tok_.text == s && tok_.kind != Token::kString; }

  Status Advance() {
    auto t = lex_.Next();
    if (!t.ok()) return t.status();
    tok_ = *t;
    return OkStatus();
  }

  Status Unexpected(std::string_view what) const {
    std::string got = tok_.kind == Token::kEnd ? "end of file" : "'" + std::string(tok_.text) + "'";
    return Err(StatusCode::kCorrupt, "metadata: byte {}: expected {}, found {}", tok_.offset, what, got);
  }

  Status Expect(std::string_view s) {
    if (!Is(s)) return Unexpected("'" + std::string(s) + "'");
    return Advance();
  }

  StatusOr<std::string> ExpectIdent() {
    if (tok_.kind != Token::kIdent) return Unexpected("an identifier");
    std::string s(tok_.text);
    STRATA_RETURN_IF_ERROR(Advance());
    return s;
  }

  StatusOr<int64_t> ExpectNumber() {
    if (tok_.kind != Token::kNumber) return Unexpected("a number");
    std::string s(tok_.text);
    size_t off = tok_.offset;
    STRATA_RETURN_IF_ERROR(Advance());
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 0);
    if (errno != 0 || end == s.c_str() || *end != '\0')
      return Err(StatusCode::kCorrupt, "metadata: byte {}: bad number '{}'", off, s);
    return static_cast<int64_t>(v);
  }

  // Skips a balanced { ... } body.
  Status SkipBraces() {
    STRATA_RETURN_IF_ERROR(Expect("{"));
    int depth = 1;
    while (depth > 0) {
      if (tok_.kind == Token::kEnd) return Unexpected("'}'");
      if (Is("{")) ++depth;
      if (Is("}")) --depth;
      STRATA_RETURN_IF_ERROR(Advance());
    }
    return OkStatus();
  }

  Status ParseTypealias() {
    STRATA_RETURN_IF_ERROR(Advance());
    if (!Is("integer") && !Is("floating_point")) return Unexpected("'integer' or 'floating_point'");
    bool is_float = Is("floating_point");
    STRATA_RETURN_IF_ERROR(Advance());
    int64_t size = 0, align = 0, exp = 0, mant = 0;
    bool is_signed = false;
    STRATA_RETURN_IF_ERROR(Expect("{"));
    while (!Is("}")) {
      STRATA_ASSIGN_OR_RETURN(std::string key, ExpectIdent());
      STRATA_RETURN_IF_ERROR(Expect("="));
      if (key == "map") {
        while (!Is(";")) {
          if (tok_.kind == Token::kEnd) return Unexpected("';'");
          STRATA_RETURN_IF_ERROR(Advance());
        }
      } else if (key == "signed") {
        is_signed = Is("true") || Is("TRUE") || Is("1");
        STRATA_RETURN_IF_ERROR(Advance());
      } else if (key == "byte_order" || key == "encoding" || key == "base") {
        STRATA_RETURN_IF_ERROR(Advance());
      } else {
        STRATA_ASSIGN_OR_RETURN(int64_t v, ExpectNumber());
        if (key == "size") size = v;
        else if (key == "align") align = v;
        else if (key == "exp_dig") exp = v;
        else if (key == "mant_dig") mant = v;
        else return Err(StatusCode::kCorrupt, "metadata: byte {}: unknown type attribute '{}'", tok_.offset, key);
      }
      STRATA_RETURN_IF_ERROR(Expect(";"));
    }
    STRATA_RETURN_IF_ERROR(Advance());
    STRATA_RETURN_IF_ERROR(Expect(":="));
    size_t name_off = tok_.offset;
    STRATA_ASSIGN_OR_RETURN(std::string name, ExpectIdent());
    STRATA_RETURN_IF_ERROR(Expect(";"));
    // Record the byte-aligned types payloads may use; the header-only bit fields
    // are checked by name below.
    if (is_float) {
      if (exp != 11 || mant != 53 || align != 8)
        return Err(StatusCode::kUnsupported, "metadata: byte {}: only byte-aligned 64-bit floats are supported", name_off);
      types_[name] = FieldType::kF64;
    } else if (align == 8) {
      if (size == 8 && !is_signed) types_[name] = FieldType::kU8;
      else if (size == 16) types_[name] = is_signed ? FieldType::kI16 : FieldType::kU16;
      else if (size == 32) types_[name] = is_signed ? FieldType::kI32 : FieldType::kU32;
      else if (size == 64) types_[name] = is_signed ? FieldType::kI64 : FieldType::kU64;
      else return Err(StatusCode::kUnsupported, "metadata: byte {}: unsupported integer type '{}'", name_off, name);
    } else if (!((size == 5 || size == 27) && align == 1)) {
      return Err(StatusCode::kUnsupported, "metadata: byte {}: unsupported bit-packed type '{}'", name_off, name);
    }
    return OkStatus();
  }

  Status ParseTrace() {
    saw_trace_ = true;
    STRATA_RETURN_IF_ERROR(Advance());
    STRATA_RETURN_IF_ERROR(Expect("{"));
    bool le = false;
    while (!Is("}")) {
      STRATA_ASSIGN_OR_RETURN(std::string key, ExpectIdent());
      if (key == "packet") {
        STRATA_RETURN_IF_ERROR(Expect("."));
        STRATA_RETURN_IF_ERROR(Expect("header"));
        STRATA_RETURN_IF_ERROR(Expect(":="));
        STRATA_RETURN_IF_ERROR(Expect("struct"));
        STRATA_RETURN_IF_ERROR(SkipBraces());
        STRATA_RETURN_IF_ERROR(Expect(";"));
        continue;
      }
      STRATA_RETURN_IF_ERROR(Expect("="));
      if (key == "uuid") {
        if (tok_.kind != Token::kString) return Unexpected("a uuid string");
        STRATA_RETURN_IF_ERROR(ParseUuid(tok_.text, tok_.offset, &md_.uuid));
        STRATA_RETURN_IF_ERROR(Advance());
      } else if (key == "byte_order") {
        le = Is("le");
        STRATA_RETURN_IF_ERROR(Advance());
      } else {
        STRATA_RETURN_IF_ERROR(Advance());
      }
      STRATA_RETURN_IF_ERROR(Expect(";"));
    }
    STRATA_RETURN_IF_ERROR(Advance());
    if (!le) return Err(StatusCode::kUnsupported, "metadata: only little-endian strata traces are supported");
    return Expect(";");
  }

  Status ParseUuid(std::string_view s, size_t off, Uuid* out) {
    size_t j = 0;
    for (size_t i = 0; i < s.size() && j < 32; ++i) {
      if (s[i] == '-') continue;
      if (!std::isxdigit(static_cast<unsigned char>(s[i])))
        return Err(StatusCode::kCorrupt, "metadata: byte {}: bad uuid", off);
      int v = std::isdigit(static_cast<unsigned char>(s[i])) ? s[i] - '0' : (std::tolower(s[i]) - 'a' + 10);
      (*out)[j / 2] = static_cast<uint8_t>(j % 2 == 0 ? v << 4 : ((*out)[j / 2] | v));
      ++j;
    }
    if (j != 32) return Err(StatusCode::kCorrupt, "metadata: byte {}: bad uuid", off);
    return OkStatus();
  }

  Status ParseEnv() {
    STRATA_RETURN_IF_ERROR(Advance());
    STRATA_RETURN_IF_ERROR(Expect("{"));
    while (!Is("}")) {
      STRATA_ASSIGN_OR_RETURN(std::string key, ExpectIdent());
      STRATA_RETURN_IF_ERROR(Expect("="));
      if (key == "strata_schema_major" || key == "strata_schema_minor") {
        STRATA_ASSIGN_OR_RETURN(int64_t v, ExpectNumber());
        (key == "strata_schema_major" ? md_.major : md_.minor) = static_cast<int>(v);
      } else {
        if (key == "hostname" && tok_.kind == Token::kString) md_.hostname = std::string(tok_.text);
        STRATA_RETURN_IF_ERROR(Advance());
      }
      STRATA_RETURN_IF_ERROR(Expect(";"));
    }
    STRATA_RETURN_IF_ERROR(Advance());
    return Expect(";");
  }

  Status ParseClock() {
    size_t clock_off = tok_.offset;
    STRATA_RETURN_IF_ERROR(Advance());
    STRATA_RETURN_IF_ERROR(Expect("{"));
    int64_t off_s = 0, off = 0, freq = 0;
    while (!Is("}")) {
      STRATA_ASSIGN_OR_RETURN(std::string key, ExpectIdent());
      STRATA_RETURN_IF_ERROR(Expect("="));
      if (key == "offset_s" || key == "offset" || key == "freq") {
        STRATA_ASSIGN_OR_RETURN(int64_t v, ExpectNumber());
        (key == "offset_s" ? off_s : key == "offset" ? off : freq) = v;
      } else {
        STRATA_RETURN_IF_ERROR(Advance());
      }
      STRATA_RETURN_IF_ERROR(Expect(";"));
    }
    STRATA_RETURN_IF_ERROR(Advance());
    if (freq != 1000000000) return Err(StatusCode::kUnsupported, "metadata: clock frequency {} (expected 1 GHz)", freq);
    // offset_s and offset are any int64 in the text: a sum outside int64 is a
    // corrupt file, not a wrapped (undefined) clock offset.
    int64_t ns;
    if (__builtin_mul_overflow(off_s, int64_t{1000000000}, &ns) || __builtin_add_overflow(ns, off, &ns))
      return Err(StatusCode::kCorrupt,
                 "metadata: byte {}: clock offset out of range (offset_s = {}, offset = {}: more than 292 years in ns)",
                 clock_off, off_s, off);
    md_.clock_offset_ns = ns;
    return Expect(";");
  }

  // "struct { type name; ... }" as a field list (packet context / event fields).
  Status ParseFieldStruct(std::vector<ParsedField>* out, bool allow_clock_types) {
    STRATA_RETURN_IF_ERROR(Expect("struct"));
    STRATA_RETURN_IF_ERROR(Expect("{"));
    while (!Is("}")) {
      size_t off = tok_.offset;
      STRATA_ASSIGN_OR_RETURN(std::string type, ExpectIdent());
      STRATA_ASSIGN_OR_RETURN(std::string name, ExpectIdent());
      STRATA_RETURN_IF_ERROR(Expect(";"));
      FieldType ft;
      if (type == "string") {
        ft = FieldType::kString;
      } else if (allow_clock_types && type == "uint64_clock_monotonic_t") {
        ft = FieldType::kU64;
      } else {
        auto it = types_.find(type);
        if (it == types_.end()) return Err(StatusCode::kCorrupt, "metadata: byte {}: unknown field type '{}'", off, type);
        ft = it->second;
      }
      out->push_back({name, ft});
    }
    return Advance();
  }

  Status ParseStream() {
    STRATA_RETURN_IF_ERROR(Advance());
    STRATA_RETURN_IF_ERROR(Expect("{"));
    ParsedStream s;
    bool have_id = false;
    while (!Is("}")) {
      STRATA_ASSIGN_OR_RETURN(std::string key, ExpectIdent());
      if (key == "id") {
        STRATA_RETURN_IF_ERROR(Expect("="));
        STRATA_ASSIGN_OR_RETURN(int64_t v, ExpectNumber());
        if (v < 0 || v > 1000) return Err(StatusCode::kCorrupt, "metadata: stream id {} out of range", v);
        s.id = static_cast<uint32_t>(v);
        have_id = true;
      } else if (key == "packet") {
        STRATA_RETURN_IF_ERROR(Expect("."));
        STRATA_RETURN_IF_ERROR(Expect("context"));
        STRATA_RETURN_IF_ERROR(Expect(":="));
        std::vector<ParsedField> ctx;
        size_t off = tok_.offset;
        STRATA_RETURN_IF_ERROR(ParseFieldStruct(&ctx, true));
        static constexpr std::string_view kCommon[] = {"timestamp_begin", "timestamp_end", "content_size",
                                                        "packet_size", "packet_seq_num", "events_discarded"};
        if (ctx.size() < kCommonContextFields)
          return Err(StatusCode::kCorrupt, "metadata: byte {}: packet context lacks the common fields", off);
        for (size_t i = 0; i < kCommonContextFields; ++i)
          if (ctx[i].name != kCommon[i] || ctx[i].type != FieldType::kU64)
            return Err(StatusCode::kCorrupt, "metadata: byte {}: packet context field {} is '{}', expected '{}'", off,
                       i, ctx[i].name, kCommon[i]);
        for (size_t i = kCommonContextFields; i < ctx.size(); ++i) {
          if (ctx[i].type == FieldType::kString)
            return Err(StatusCode::kUnsupported, "metadata: byte {}: string in packet context", off);
          s.context.push_back(ctx[i]);
        }
      } else if (key == "event") {
        // The header layout is fixed (compact/extended); skip its declaration.
        STRATA_RETURN_IF_ERROR(Expect("."));
        STRATA_RETURN_IF_ERROR(Expect("header"));
        STRATA_RETURN_IF_ERROR(Expect(":="));
        STRATA_RETURN_IF_ERROR(Expect("struct"));
        STRATA_RETURN_IF_ERROR(SkipBraces());
        if (Is("align")) {
          STRATA_RETURN_IF_ERROR(Advance());
          STRATA_RETURN_IF_ERROR(Expect("("));
          STRATA_RETURN_IF_ERROR(ExpectNumber().status());
          STRATA_RETURN_IF_ERROR(Expect(")"));
        }
      } else {
        return Err(StatusCode::kCorrupt, "metadata: byte {}: unknown stream attribute '{}'", tok_.offset, key);
      }
      STRATA_RETURN_IF_ERROR(Expect(";"));
    }
    STRATA_RETURN_IF_ERROR(Advance());
    STRATA_RETURN_IF_ERROR(Expect(";"));
    if (!have_id) return Err(StatusCode::kCorrupt, "metadata: stream block without id");
    if (md_.streams.size() <= s.id) md_.streams.resize(s.id + 1);
    uint32_t id = s.id;
    std::vector<ParsedEvent> events = std::move(md_.streams[id].events);  // events may precede? keep any
    md_.streams[id] = std::move(s);
    md_.streams[id].id = id;
    md_.streams[id].declared = true;
    if (!events.empty()) md_.streams[id].events = std::move(events);
    return OkStatus();
  }

  Status ParseEvent() {
    size_t block_off = tok_.offset;
    STRATA_RETURN_IF_ERROR(Advance());
    STRATA_RETURN_IF_ERROR(Expect("{"));
    ParsedEvent e;
    int64_t stream_id = -1, id = -1;
    while (!Is("}")) {
      STRATA_ASSIGN_OR_RETURN(std::string key, ExpectIdent());
      if (key == "fields") {
        STRATA_RETURN_IF_ERROR(Expect(":="));
        STRATA_RETURN_IF_ERROR(ParseFieldStruct(&e.fields, false));
      } else {
        STRATA_RETURN_IF_ERROR(Expect("="));
        if (key == "name") {
          if (tok_.kind != Token::kString) return Unexpected("an event name string");
          e.name = std::string(tok_.text);
          STRATA_RETURN_IF_ERROR(Advance());
        } else if (key == "id") {
          STRATA_ASSIGN_OR_RETURN(id, ExpectNumber());
        } else if (key == "stream_id") {
          STRATA_ASSIGN_OR_RETURN(stream_id, ExpectNumber());
        } else {
          STRATA_RETURN_IF_ERROR(Advance());
        }
      }
      STRATA_RETURN_IF_ERROR(Expect(";"));
    }
    STRATA_RETURN_IF_ERROR(Advance());
    STRATA_RETURN_IF_ERROR(Expect(";"));
    if (id < 0 || id > 65535 || stream_id < 0 || stream_id > 1000 || e.name.empty())
      return Err(StatusCode::kCorrupt, "metadata: byte {}: event block needs name, id (<65536) and stream_id", block_off);
    e.id = static_cast<uint32_t>(id);
    int32_t fixed = 0;
    for (const ParsedField& f : e.fields) {
      if (f.type == FieldType::kString) {
        fixed = -1;
        break;
      }
      fixed += static_cast<int32_t>(FieldSize(f.type));
    }
    e.fixed_size = fixed;
    auto sid = static_cast<uint32_t>(stream_id);
    if (md_.streams.size() <= sid) md_.streams.resize(sid + 1);
    auto& evs = md_.streams[sid].events;
    if (evs.size() <= e.id) evs.resize(e.id + 1);
    if (!evs[e.id].name.empty())
      return Err(StatusCode::kCorrupt, "metadata: byte {}: duplicate event id {} in stream {}", block_off, e.id, sid);
    evs[e.id] = std::move(e);
    return OkStatus();
  }

  std::string_view text_;
  Lexer lex_;
  Token tok_{Token::kEnd, {}, 0};
  ParsedMetadata md_;
  bool saw_trace_ = false;
  std::unordered_map<std::string, FieldType> types_;
};

}  // namespace

StatusOr<ParsedMetadata> ParseMetadata(std::string_view text) { return Parser(text).Parse(); }

}  // namespace strata::format
