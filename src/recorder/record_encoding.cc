#include "recorder/record_encoding.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "format/schema.h"

namespace strata::recorder {

void AppendNarrowed(format::StreamWriter& w, const Record* r, uint64_t ts) {
  const uint8_t* payload = r->size <= 4 ? reinterpret_cast<const uint8_t*>(&r->inline4)
                                        : reinterpret_cast<const uint8_t*>(r + 1);
  switch (r->event_id) {
    case format::kSpanBegin:
      if (r->inline4 < 0x10000) {
        auto name = static_cast<uint16_t>(r->inline4);
        w.Append(format::kSpanBegin16, ts, &name, 2);
        return;
      }
      break;
    case format::kStepBegin:
    case format::kStepEnd:
    case format::kFlowOut:
    case format::kFlowIn: {
      // A step or flow number that fits 32 bits: the event's narrow form.
      uint64_t v;
      std::memcpy(&v, payload, 8);
      if (v <= UINT32_MAX) {
        auto v32 = static_cast<uint32_t>(v);
        uint32_t narrow = r->event_id == format::kStepBegin ? format::kStepBegin32
                          : r->event_id == format::kStepEnd ? format::kStepEnd32
                          : r->event_id == format::kFlowOut ? format::kFlowOut32
                                                            : format::kFlowIn32;
        w.Append(narrow, ts, &v32, 4);
        return;
      }
      break;
    }
    case format::kCounter: {
      uint32_t name;
      double value;
      std::memcpy(&name, payload, 4);
      std::memcpy(&value, payload + 4, 8);
      if (name < 0x10000 && value >= INT16_MIN && value <= INT16_MAX &&
          value == static_cast<double>(static_cast<int16_t>(value))) {
        uint8_t p[4];
        auto n16 = static_cast<uint16_t>(name);
        auto v16 = static_cast<int16_t>(value);
        std::memcpy(p, &n16, 2);
        std::memcpy(p + 2, &v16, 2);
        w.Append(format::kCounter8, ts, p, 4);
        return;
      }
      if (name < 0x10000 && value >= INT32_MIN && value <= INT32_MAX && value == static_cast<double>(static_cast<int32_t>(value))) {
        uint8_t p[6];
        auto n16 = static_cast<uint16_t>(name);
        auto v32 = static_cast<int32_t>(value);
        std::memcpy(p, &n16, 2);
        std::memcpy(p + 2, &v32, 4);
        w.Append(format::kCounter16, ts, p, 6);
        return;
      }
      break;
    }
    default:
      break;
  }
  w.Append(r->event_id, ts, payload, r->size);
}

std::string SupervisorSocketName(const format::Uuid& uuid) {
  std::string name(1, '\0');
  name += "strata-record-";
  char hex[3];
  for (uint8_t b : uuid) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    name += hex;
  }
  return name;
}

uint64_t ProcessStartTicks(uint32_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%u/stat", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The command name (field 2) may hold spaces and parentheses: fields resume
  // after its last ')'. starttime is field 22, the 20th after it.
  const char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  ++p;
  while (*p == ' ') ++p;
  if (*p == 'Z' || *p == 'X') return 0;  // a zombie runs no more code: as good as gone
  for (int field = 3; field < 22 && *p; ++field) {
    while (*p == ' ') ++p;
    while (*p && *p != ' ') ++p;
  }
  return std::strtoull(p, nullptr, 10);
}

}  // namespace strata::recorder
