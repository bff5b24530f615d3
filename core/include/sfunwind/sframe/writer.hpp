// SPDX-License-Identifier: MIT
// An SFrame encoder: builds a .sframe section (v1, v2, v2 with erratum 1's
// PC-relative starts, or v3) from functions described by their rules. Used by
// the tests to make sections with exactly the rules they need, and by
// `sfunwind convert` to write v3 sections from DWARF CFI.
//
// Rules are given as the decoder returns them (CfaRule, RegRule), so that a
// section decoded with Section::row() can be written back. A rule that the
// chosen version, ABI and FDE type cannot express is an error, never a silent
// approximation.
#pragma once

#include "sfunwind/bytes.hpp"
#include "sfunwind/error.hpp"
#include "sfunwind/row.hpp"
#include "sfunwind/sframe/format.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace sfunwind::sframe {

// One FRE: the rules from `start` (bytes from the function start; for a
// PC-mask FDE, from the start of each repeat block) to the next FRE's start.
struct FreSpec {
    std::uint32_t start = 0;
    // Default FDEs: the ABI's SP or FP, no dereference. Flexible FDEs: any
    // DWARF register, optionally dereferenced.
    CfaRule cfa;
    // RegRule::undefined() makes an FRE without data words: the outermost
    // frame (spec v2 erratum 2, v3 section 2.4.1); cfa and fp are then unused.
    // The rule's `source` says how to write a rule that is the ABI default:
    // Source::Fre writes it in data words where the FDE type can, the others
    // rely on the default (header offset, padding word or no word).
    RegRule ra = RegRule::same_value();
    RegRule fp = RegRule::same_value();
    bool mangled_ra = false; // AArch64 PAuth-signed RA (FRE info bit 7)
    // Data word size in bytes (1, 2 or 4). Unset: the smallest that holds
    // every word of this FRE.
    std::optional<unsigned> word_size;
};

// One function (an FDE and its FREs).
struct FdeSpec {
    std::uint64_t start = 0; // link-time address of the function
    std::uint32_t size = 0;
    PcType pc_type = PcType::Inc;
    std::uint8_t rep_size = 0;           // repeat block size of PC-mask FDEs (v1: 16, AMD64 only)
    FdeType fde_type = FdeType::Default; // Flex needs v3
    bool signal = false;                 // v3 only
    PauthKey pauth_key = PauthKey::A;    // key B is AArch64 only
    std::vector<FreSpec> fres;           // by increasing start
    // FRE start field width. Unset: the smallest that holds every FRE start.
    std::optional<FreType> fre_type;
};

// Deliberately odd output for tests of the decoder's defences. None of these
// is ever needed to write a valid section.
struct WriterQuirks {
    // Write the FDEs in the order given even when SFRAME_F_FDE_SORTED is set.
    bool keep_fde_order = false;
    // Skip the checks of FRE order, FRE starts, PAuth keys and mangled-RA
    // bits on non-AArch64 ABIs, and the overlap of functions.
    bool unchecked = false;
    // OR'ed into the flags byte (e.g. PCREL in a v1 section).
    std::uint8_t extra_flags = 0;
    // Byte order of the whole section, when it should disagree with the ABI.
    std::optional<ByteOrder> byte_order;
    // An auxiliary header (spec v3 section 2.2, sfh_auxhdr_len), at most 255 bytes.
    std::vector<std::uint8_t> auxhdr;
};

struct WriterOptions {
    Version version = Version::V3;
    AbiArch abi = AbiArch::Amd64Little;
    // Link-time address of the section: function starts are stored relative
    // to it, or to their own field with PC-relative starts.
    std::uint64_t section_vaddr = 0;
    // SFRAME_F_FDE_FUNC_START_PCREL (v2 erratum 1, v3). Ignored for v1,
    // whose starts are always section-relative.
    bool pcrel = true;
    // Sort the FDEs by start and set SFRAME_F_FDE_SORTED. When false, the
    // FDEs keep the order given and the flag is clear.
    bool sorted = true;
    // SFRAME_F_FRAME_POINTER (v1 and v2 only).
    bool frame_pointer = false;
    // sfh_cfa_fixed_ra_offset / sfh_cfa_fixed_fp_offset. Unset: the ABI's
    // (AMD64 fixes the RA at CFA-8; nothing else is fixed).
    std::optional<std::int8_t> cfa_fixed_ra_offset;
    std::optional<std::int8_t> cfa_fixed_fp_offset;
    WriterQuirks quirks;
};

// Where the writer put things, so tests can patch or name exact offsets.
struct WrittenFde {
    std::size_t input_index = 0;    // position in the order add() was called
    std::uint64_t entry_offset = 0; // FDE (v3: FDE index) record
    std::uint64_t attr_offset = 0;  // v3: the attribute record; else = entry_offset
    std::vector<std::uint64_t> fre_offsets;
};

struct SectionMap {
    std::uint64_t fde_subsection = 0;
    std::uint64_t fre_subsection = 0;
    std::vector<WrittenFde> fdes; // in section order
};

class Writer {
  public:
    explicit Writer(WriterOptions options);

    void add(FdeSpec fde);
    const WriterOptions& options() const noexcept { return options_; }

    // The section's bytes. Errors (Errc::Unsupported for a rule the version,
    // ABI or FDE type cannot encode; Errc::Malformed for inconsistent input)
    // name the function and the FRE by index and start address.
    Expected<std::vector<std::uint8_t>> write(SectionMap* map = nullptr) const;

  private:
    WriterOptions options_;
    std::vector<FdeSpec> fdes_;
};

} // namespace sfunwind::sframe
