// SPDX-License-Identifier: MIT
#include "input.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace sfunwind::cli {

Expected<std::unique_ptr<Input>> open_input(const std::string& path, const InputOptions& options) {
    auto in = std::make_unique<Input>();
    in->path = path;
    if (options.raw) {
        std::ifstream f(path, std::ios::binary);
        if (!f) return Error(Errc::Io, path + ": " + std::strerror(errno));
        in->raw_bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
        in->bytes = in->raw_bytes;
        auto s = sframe::Section::parse(in->bytes, options.base);
        if (!s) return Error(s.error().code(), path + ": " + s.error().message());
        in->section.emplace(std::move(*s));
        return in;
    }
    auto file = elf::ElfFile::open(path);
    if (!file) return std::move(file).error();
    in->elf = std::make_unique<elf::ElfFile>(std::move(*file));
    auto where = in->elf->find_sframe();
    if (!where) return std::move(where).error();
    in->where = *where;
    auto bytes = in->elf->sframe_bytes(*where);
    if (!bytes) return std::move(bytes).error();
    in->bytes = *bytes;
    auto s = sframe::Section::parse(in->bytes, where->vaddr);
    if (!s) return Error(s.error().code(), path + ": " + where->name + ": " + s.error().message());
    in->section.emplace(std::move(*s));
    return in;
}

std::string bfd_target_name(const elf::ElfFile& file) {
    const auto abi = file.abi();
    if (!abi) return "elf64-unknown";
    const bool big = abi->order == ByteOrder::Big;
    switch (abi->arch) {
    case Arch::X86_64:
        return "elf64-x86-64";
    case Arch::AArch64:
        return big ? "elf64-bigaarch64" : "elf64-littleaarch64";
    case Arch::S390x:
        return "elf64-s390";
    case Arch::Ppc64:
        return big ? "elf64-powerpc" : "elf64-powerpcle";
    }
    return "elf64-unknown";
}

std::optional<std::uint64_t> parse_address(const std::string& text) {
    if (text.empty()) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 0);
    if (errno != 0 || end == text.c_str() || *end != '\0' || text[0] == '-') return std::nullopt;
    return static_cast<std::uint64_t>(v);
}

} // namespace sfunwind::cli
