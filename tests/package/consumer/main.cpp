// SPDX-License-Identifier: MIT
// Prints the number of SFrame FDEs of a file, through the installed headers
// and libraries (README: "Using the library").
#include <cstdio>
#include <sfunwind/elf/elf_file.hpp>

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    auto file = sfunwind::elf::ElfFile::open(argv[1]);
    if (!file) {
        std::puts(file.error().message().c_str());
        return 1;
    }
    auto section = file->sframe();
    if (!section) {
        std::puts(section.error().message().c_str());
        return 1;
    }
    std::printf("fdes %u\n", static_cast<unsigned>(section->fde_count()));
    return 0;
}
