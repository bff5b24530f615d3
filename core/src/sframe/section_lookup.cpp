// SPDX-License-Identifier: MIT
// The lookup path of Section: PC -> FDE -> FRE -> Row, and the FDE indexes
// that parse() builds for it. A profiler or a debugger asks for one row per
// frame, so a lookup does only the work the answer needs: the FDE search
// reads nothing but start fields, only the FDE it lands on is decoded, FREs
// before the chosen one are skipped by their start and info byte alone, and
// the chosen FRE's data words go straight to the rules.
//
// Every read stays bounds-checked (ByteView). The one check made once
// instead of per read: parse() verified that all num_fdes FDE records lie
// inside the section, and the search only reads records below num_fdes.
//
// Errors: find_row() is written once and run twice. First with Quiet, which
// builds no message, so a successful lookup never touches a std::string;
// only when that fails is it run again with Explain, to say what went wrong
// and where (layout.hpp).
#include "layout.hpp"
#include "layout_v3.hpp"
#include "rules.hpp"
#include "sfunwind/sframe/section.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/endian/conversion.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace sfunwind::sframe {
namespace {

// Where the FDE start fields are. The start of the FDE whose record is at
// section offset `at` is vaddr + field, or with SFRAME_F_FDE_FUNC_START_PCREL
// (spec v2 erratum 1, v3 section 2.1.3) vaddr + at + field: the field counts
// from its own address.
struct Starts {
    ByteView view;
    std::uint64_t first; // section offset of FDE 0's start field
    std::uint64_t vaddr;
    std::uint64_t pcrel;        // all ones with PC-relative starts, else 0
    const std::uint32_t* order; // FDE indices in start order; null: in place
};

// The start of FDE i (in section order). Field, Stride and Order are the
// layout's Layout::start_field_size and Layout::fde_size and the section's
// byte order as constants, so that a probe is a shift, an add and a load.
//
// Checked: whether each read is bounds-checked. Always in bounds for i <
// num_fdes, as parse() checked that num_fdes records fit; quick_v3() reads
// no other (its indices, and the order index's entries, are below
// num_fdes; it is not used on a section without FDEs), and saves the
// check. The general path keeps it, at the price of one predictable branch.
template <typename Field, std::uint64_t Stride, boost::endian::order Order, bool Checked = true>
struct StartAt {
    std::uint64_t operator()(const Starts& s, std::uint32_t i) const noexcept {
        const std::uint64_t at = s.first + std::uint64_t{i} * Stride;
        const auto bytes = s.view.bytes();
        const Field field =
            !Checked || (at <= bytes.size() && bytes.size() - at >= sizeof(Field))
                ? boost::endian::endian_load<Field, sizeof(Field), Order>(bytes.data() + at)
                : Field{0};
        return s.vaddr + (at & s.pcrel) + static_cast<std::uint64_t>(std::int64_t{field});
    }
};

// The same for a layout without a specialisation below: sizes at run time.
struct AnyStartAt {
    std::uint64_t stride;
    bool wide; // 8-byte start field, else 4
    std::uint64_t operator()(const Starts& s, std::uint32_t i) const noexcept {
        const std::uint64_t at = s.first + std::uint64_t{i} * stride;
        std::int64_t field = 0;
        std::int32_t narrow = 0;
        if (wide)
            (void)s.view.load(at, field);
        else if (s.view.load(at, narrow))
            field = narrow;
        return s.vaddr + (at & s.pcrel) + static_cast<std::uint64_t>(field);
    }
};

// Calls f with the start reader for this layout (v3: 8-byte fields in
// 16-byte index records; v2: 4 in 20; v1: 4 in 17) and byte order.
template <boost::endian::order Order, typename F>
void with_start_reader(const Layout& layout, F&& f) {
    if (layout.start_field_size == 8 && layout.fde_size == 16)
        f(StartAt<std::int64_t, 16, Order>{});
    else if (layout.start_field_size == 4 && layout.fde_size == 20)
        f(StartAt<std::int32_t, 20, Order>{});
    else if (layout.start_field_size == 4 && layout.fde_size == 17)
        f(StartAt<std::int32_t, 17, Order>{});
    else
        f(AnyStartAt{layout.fde_size, layout.start_field_size == 8});
}
template <typename F> void with_start_reader(const Layout& layout, ByteOrder order, F&& f) {
    if (order == ByteOrder::Little)
        with_start_reader<boost::endian::order::little>(layout, f);
    else
        with_start_reader<boost::endian::order::big>(layout, f);
}

// FDE starts compared at once by the search below.
constexpr std::uint32_t small_page = 4;

// How many of the n FDEs in start order from position lo start at or below
// pc, plus lo. Branch-free halving: log2(n) steps whatever the starts, and
// the one data-dependent choice per step is a conditional move, not a
// branch that random PCs would mispredict half of the time. (A fixed step
// count per section, enough for the fullest page, was tried: the loop's
// exit is then predicted, but the fullest page needs several more steps
// than the typical one, each a dependent load, and lookups got slower.)
template <bool Indexed, typename Start>
std::uint32_t count_at_or_below(const Starts& s, const Start& start, std::uint32_t lo,
                                std::uint32_t n, std::uint64_t pc) {
    auto key = [&](std::uint32_t k) { return start(s, Indexed ? s.order[k] : k); };
    if (n <= small_page) {
        // Most PCs fall in a page with few FDE starts (big functions span
        // pages): compare them all, with loads that do not wait for each
        // other and no branch on the outcome. Slots past the n FDEs read
        // the last of them (or, with n = 0, the one before lo, or FDE 0)
        // and do not count.
        const std::uint32_t last = std::max(lo + n, 1U) - 1U;
        std::uint32_t count = lo;
        for (std::uint32_t j = 0; j < small_page; ++j)
            count += static_cast<std::uint32_t>((j < n) & (key(std::min(lo + j, last)) <= pc));
        return count;
    }
    while (n > 1) {
        const std::uint32_t half = n / 2;
        lo = key(lo + half) <= pc ? lo + half : lo;
        n -= half;
    }
    return lo + (key(lo) <= pc ? 1U : 0U);
}

// Pages of at least 2^min_page_shift bytes, fewer than one per two FDEs:
// about 1 to 2 bytes per FDE, with a page holding a few FDE starts.
constexpr std::uint32_t min_fdes_for_pages = 64;
constexpr unsigned min_page_shift = 4;

// The FRE scan's result: the first FRE whose start is past the PC's offset
// in the function, so that the one before it, the chosen FRE, covers the PC
// (spec v3 section 2.3.3.1, PCINC; FREs are in ascending start order).
struct Scan {
    std::uint32_t index = 0;  // that FRE's index, or the FRE count
    std::uint64_t at = 0;     // its section offset
    std::uint32_t start = 0;  // its start offset
    std::uint64_t chosen = 0; // section offset of the FRE before it
    std::uint32_t chosen_start = 0;
    std::uint8_t chosen_info = 0;
    // Set when the FRE at `at` has a start or info byte that cannot be read,
    // or the invalid data word size code 3: the scan stopped there.
    bool unreadable = false;
};

// FRE marks (Section::fre_marks_). FREs differ in length, so the chosen
// one cannot be found by bisection; the scan below walks them, one
// dependent load per FRE, and a lookup in a function of 20 FREs spent most
// of its time there. A mark says where one FRE lies, so the scan can start
// there: mark k (0 to 3) of an FDE with `count` FREs is FRE
// mark_index(count, k), and byte k of the FDE's 32-bit word is its distance
// in bytes from mark k - 1 (from the first FRE for mark 0). A byte of 0 ends
// the marks: the distance did not fit, or an FRE up to that mark could not
// be read or started below the one before it (only what a scan from the
// first FRE would have walked through is marked). FDEs with at most
// fre_mark_count FREs get no marks (word 0). A word is built on the FDE's
// first lookup; until then it is unbuilt_marks, which no FDE's marks are
// (a 0 byte is followed by 0 bytes only).
constexpr unsigned fre_mark_count = 4;
constexpr std::uint32_t unbuilt_marks = 0xffffff00U;
constexpr std::uint32_t mark_index(std::uint32_t count, unsigned k) {
    return static_cast<std::uint32_t>(std::uint64_t{count} * (k + 1U) / (fre_mark_count + 1U));
}

// Reads only the start field (Width bytes: the FRE type, spec v3 section
// 2.3.3.3) and the info byte of each FRE, which gives the FRE's length
// (section 2.4.1: a 4-bit word count and a 2-bit word size code). One
// bounds check per FRE covers both fields: [at, at + Width + 1) must lie in
// the FRE sub-section. Kept out of line, so that the loop has the registers
// to itself.
//
// With marks, it first reads the marked FREs' starts (independent loads)
// and begins at the last mark whose start is <= pc_offset. That gives the
// scan's answer: the FREs before that mark start no higher than it (they
// are in ascending order, marks_of() checked), so a scan from the first FRE
// would not have stopped before it.
template <unsigned Width, boost::endian::order Order>
[[gnu::noinline]] Scan scan(std::span<const std::uint8_t> fres, std::uint64_t at,
                            std::uint32_t count, std::uint64_t pc_offset, std::uint32_t marks) {
    Scan r;
    const std::uint8_t* data = fres.data();
    const std::uint64_t size = fres.size();
    std::uint32_t i = 0;
    if (marks != 0 && size >= Width) {
        // Branch-free: whether a PC is past a mark is a coin toss that a
        // branch predictor would lose. `passed` counts the marks at or
        // below pc_offset; a mark that cannot be used, and every one after
        // it, counts as above.
        std::array<std::uint64_t, fre_mark_count + 1> where{at};
        std::uint64_t mark = at;
        unsigned passed = 0;
        bool usable = true;
        for (unsigned k = 0; k < fre_mark_count; ++k) {
            const std::uint32_t step = (marks >> (8U * k)) & 0xffU;
            mark += step;
            usable = usable & (step != 0) & (mark <= size - Width);
            const std::uint64_t readable = usable ? mark : 0; // read in bounds regardless
            const std::uint32_t start =
                boost::endian::endian_load<std::uint32_t, Width, Order>(data + readable);
            passed += static_cast<unsigned>(usable & (start <= pc_offset));
            where[k + 1] = mark;
        }
        at = where[passed];
        i = passed == 0 ? 0 : mark_index(count, passed - 1);
    }
    // The last offset at which an FRE's start and info byte fit.
    const bool room = size >= Width + 1U;
    const std::uint64_t last_at = room ? size - (Width + 1U) : 0;
    // The chosen FRE in locals, stored into r once at the end: r is written
    // through a pointer that the byte loads from `data` may alias, so
    // storing to it in the loop would keep every field in memory.
    std::uint64_t chosen = r.chosen;
    std::uint32_t chosen_start = r.chosen_start;
    std::uint8_t chosen_info = r.chosen_info;
    for (; i < count; ++i) {
        if (at > last_at || !room) {
            r.unreadable = true;
            break;
        }
        const std::uint32_t start =
            boost::endian::endian_load<std::uint32_t, Width, Order>(data + at);
        const std::uint8_t info = data[at + Width];
        if (fre_info::size_code(info) == fre_info::invalid_size_code) {
            r.unreadable = true;
            break;
        }
        if (start > pc_offset) {
            r.start = start;
            break;
        }
        chosen = at;
        chosen_start = start;
        chosen_info = info;
        at += Width + 1U + (fre_info::word_count(info) << fre_info::size_code(info));
    }
    r.chosen = chosen;
    r.chosen_start = chosen_start;
    r.chosen_info = chosen_info;
    r.index = i;
    r.at = at;
    return r;
}

// scan() for an FRE type (one of the three: the caller checked), in byte
// order Order.
template <boost::endian::order Order>
Scan scan(std::span<const std::uint8_t> fres, FreType type, std::uint64_t at, std::uint32_t count,
          std::uint64_t pc_offset, std::uint32_t marks) {
    switch (type) {
    case FreType::Addr1:
        return scan<1, Order>(fres, at, count, pc_offset, marks);
    case FreType::Addr2:
        return scan<2, Order>(fres, at, count, pc_offset, marks);
    default:
        return scan<4, Order>(fres, at, count, pc_offset, marks);
    }
}

// The same in the section's byte order, known at run time.
Scan scan(const ByteView& frev, FreType type, std::uint64_t at, std::uint32_t count,
          std::uint64_t pc_offset, std::uint32_t marks) {
    using boost::endian::order;
    return frev.order() == ByteOrder::Little
               ? scan<order::little>(frev.bytes(), type, at, count, pc_offset, marks)
               : scan<order::big>(frev.bytes(), type, at, count, pc_offset, marks);
}

// The marks word of an FDE whose `count` FREs begin at `at` (see
// fre_mark_count): the walk scan() makes, with its checks, to the last mark,
// and also the check that the starts ascend. Width and Order as in scan():
// Section::fre_marks_of() runs this at an FDE's first lookup.
template <unsigned Width, boost::endian::order Order>
std::uint32_t marks_of(std::span<const std::uint8_t> fres, std::uint64_t at, std::uint32_t count) {
    if (count <= fre_mark_count) return 0;
    const std::uint8_t* data = fres.data();
    const std::uint64_t size = fres.size();
    std::uint32_t marks = 0;
    unsigned k = 0;
    std::uint32_t next = mark_index(count, 0);
    std::uint64_t previous_mark = at;
    std::uint32_t previous_start = 0;
    for (std::uint32_t j = 0; j < count; ++j) {
        if (at >= size || size - at < Width + 1U) break;
        const std::uint32_t start =
            boost::endian::endian_load<std::uint32_t, Width, Order>(data + at);
        const std::uint8_t info = data[at + Width];
        if (fre_info::size_code(info) == fre_info::invalid_size_code || start < previous_start)
            break;
        previous_start = start;
        if (j == next) {
            const std::uint64_t step = at - previous_mark; // > 0: the mark moved
            if (step == 0 || step > 0xffU) break;
            marks |= static_cast<std::uint32_t>(step) << (8U * k);
            previous_mark = at;
            if (++k == fre_mark_count) break;
            next = mark_index(count, k);
        }
        at += Width + 1U + (fre_info::word_count(info) << fre_info::size_code(info));
    }
    return marks;
}

std::uint32_t marks_of(const ByteView& frev, FreType type, std::uint64_t at, std::uint32_t count) {
    using boost::endian::order;
    const bool little = frev.order() == ByteOrder::Little;
    const auto bytes = frev.bytes();
    switch (type) {
    case FreType::Addr1:
        return little ? marks_of<1, order::little>(bytes, at, count)
                      : marks_of<1, order::big>(bytes, at, count);
    case FreType::Addr2:
        return little ? marks_of<2, order::little>(bytes, at, count)
                      : marks_of<2, order::big>(bytes, at, count);
    case FreType::Addr4:
        return little ? marks_of<4, order::little>(bytes, at, count)
                      : marks_of<4, order::big>(bytes, at, count);
    }
    return 0;
}

// The `count` data words of `size` bytes at `at`, sign-extended (spec v3
// section 2.4.1); false when they run past the FRE sub-section. One bounds
// check covers them all.
//
// Up to three words (all a default FDE has) with room for a 4-byte load at
// the last one: three 4-byte loads whatever the count and size, each
// sign-extended by shifts, so that neither the word size nor the count is a
// branch that varies from one lookup to the next. Words past `count` are
// read (inside the section) and not used.
template <boost::endian::order Order>
bool read_words(const ByteView& frev, std::uint64_t at, unsigned count, unsigned size,
                std::int32_t* out) {
    if (!frev.contains(at, std::uint64_t{count} * size)) return false;
    using boost::endian::endian_load;
    using boost::endian::order;
    const std::uint8_t* p = frev.bytes().data() + at;
    if (count <= 3 && frev.contains(at, 2U * size + 4U)) {
        const unsigned unused = 32U - 8U * size; // high bits past the word
        for (unsigned i = 0; i < 3; ++i, p += size) {
            if constexpr (Order == order::little) {
                const std::uint32_t raw = endian_load<std::uint32_t, 4, order::little>(p);
                out[i] = static_cast<std::int32_t>(raw << unused) >> unused;
            } else {
                out[i] = endian_load<std::int32_t, 4, order::big>(p) >> unused;
            }
        }
        return true;
    }
    for (unsigned i = 0; i < count; ++i, p += size) {
        switch (size) {
        case 1:
            // FRE data words are signed (SFrame section 2.4): sign-extend.
            // NOLINTNEXTLINE(bugprone-signed-char-misuse)
            out[i] = endian_load<std::int8_t, 1, order::little>(p);
            break;
        case 2:
            out[i] = endian_load<std::int16_t, 2, Order>(p);
            break;
        default:
            out[i] = endian_load<std::int32_t, 4, Order>(p);
            break;
        }
    }
    return true;
}

// read_words() in the section's byte order, known at run time.
bool read_words(const ByteView& frev, std::uint64_t at, unsigned count, unsigned size,
                std::int32_t* out) {
    using boost::endian::order;
    return frev.order() == ByteOrder::Little ? read_words<order::little>(frev, at, count, size, out)
                                             : read_words<order::big>(frev, at, count, size, out);
}

} // namespace

bool Section::page_range(std::uint64_t pc, std::uint32_t& lo, std::uint32_t& n) const noexcept {
    if (pages_.empty()) return true;
    // The page index narrows the search to the FDEs that start in pc's
    // page: those before it all start at or below pc, those after above.
    if (pc < page_origin_) return false;
    const std::uint64_t page = (pc - page_origin_) >> page_shift_;
    if (page + 1 >= pages_.size()) { // past the highest start: all of them
        lo = n;
        n = 0;
        return true;
    }
    lo = pages_[page];
    n = pages_[page + 1] - lo;
    return true;
}

std::uint32_t Section::fdes_starting_at_or_below(std::uint64_t pc) const noexcept {
    std::uint32_t lo = 0;
    std::uint32_t n = header_.num_fdes;
    if (!page_range(pc, lo, n)) return 0;
    const Starts s{view_, fde_sub_, vaddr_, header_.pcrel() ? ~std::uint64_t{0} : 0,
                   order_.empty() ? nullptr : order_.data()};
    std::uint32_t count = 0;
    with_start_reader(*layout_, view_.order(), [&](const auto& start) {
        count = s.order != nullptr ? count_at_or_below<true>(s, start, lo, n, pc)
                                   : count_at_or_below<false>(s, start, lo, n, pc);
    });
    return count;
}

std::uint64_t Section::start_in_order(std::uint32_t position) const noexcept {
    if (position >= header_.num_fdes) return ~std::uint64_t{0};
    const Starts s{view_, fde_sub_, vaddr_, header_.pcrel() ? ~std::uint64_t{0} : 0, nullptr};
    const std::uint32_t index = order_.empty() ? position : order_[position];
    std::uint64_t out = 0;
    with_start_reader(*layout_, view_.order(), [&](const auto& start) { out = start(s, index); });
    return out;
}

void Section::build_indexes() {
    const std::uint32_t n = header_.num_fdes;
    const Starts s{view_, fde_sub_, vaddr_, header_.pcrel() ? ~std::uint64_t{0} : 0, nullptr};
    with_start_reader(*layout_, view_.order(), [&](const auto& start) {
        // Binary search in place only when the section says it is sorted
        // and it is (clang + lld output is not; a corrupt one may lie).
        // Otherwise keep the FDE numbers in start order: 4 bytes per FDE.
        bool sorted = header_.sorted();
        for (std::uint32_t i = 1; sorted && i < n; ++i)
            sorted = start(s, i - 1) <= start(s, i);
        if (!sorted && n > 1) {
            std::vector<std::pair<std::uint64_t, std::uint32_t>> keys(n);
            for (std::uint32_t i = 0; i < n; ++i)
                keys[i] = {start(s, i), i};
            std::stable_sort(keys.begin(), keys.end(),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
            order_.resize(n);
            for (std::uint32_t i = 0; i < n; ++i)
                order_[i] = keys[i].second;
        }
        if (n < min_fdes_for_pages) return;

        // The page index: pages_[p] = how many FDEs (in start order) start
        // before page p, for pages 0 .. last covering [origin, origin +
        // span]; one more entry, n, closes the last page. The page size is
        // the smallest power of two that gives fewer pages than n / 2.
        auto key = [&](std::uint32_t k) { return start(s, order_.empty() ? k : order_[k]); };
        const std::uint64_t origin = key(0);
        const std::uint64_t span = key(n - 1) - origin;
        unsigned shift = min_page_shift;
        while (shift < 63 && (span >> shift) >= n / 2)
            ++shift;
        const std::uint64_t last = span >> shift; // (last << shift) <= span: no boundary overflows
        pages_.assign(static_cast<std::size_t>(last) + 2, n);
        std::uint32_t k = 0;
        for (std::uint64_t page = 0; page <= last; ++page) {
            const std::uint64_t begin = origin + (page << shift);
            while (k < n && key(k) < begin)
                ++k;
            pages_[static_cast<std::size_t>(page)] = k;
        }
        page_origin_ = origin;
        page_shift_ = static_cast<std::uint8_t>(shift);
    });
    quick_v3_ = layout_->read_core != nullptr && n > 0 && layout_->start_field_size == 8 &&
                layout_->fde_size == 16;
    build_fre_marks();
}

void Section::build_fre_marks() {
    // Sorted sections only: an unsorted one already spends 4 bytes per FDE
    // on its order index, and the marks would take it past 8. Each word is
    // built on its FDE's first lookup (fre_marks_of()): a debugger looks up
    // a few hundred PCs, and walking every FDE's FREs at open took longer
    // than all of those lookups.
    const std::uint32_t n = header_.num_fdes;
    if (!order_.empty() || n == 0) return;
    fre_marks_.assign(n, unbuilt_marks);
}

std::uint32_t Section::fre_marks_of(std::uint32_t index, FreType type, std::uint64_t fres_begin,
                                    std::uint32_t count) const noexcept {
    if (index >= fre_marks_.size()) return 0;
    // Lookups may run on several threads (LLDB's translation): the word is
    // read and written whole, and two threads building it write the same.
    std::atomic_ref<std::uint32_t> word(fre_marks_[index]);
    std::uint32_t marks = word.load(std::memory_order_relaxed);
    if (marks == unbuilt_marks) [[unlikely]] {
        const ByteView frev(view_.bytes().subspan(0, fre_sub_ + header_.fre_len), view_.order());
        marks = marks_of(frev, type, fres_begin, count);
        word.store(marks, std::memory_order_relaxed);
    }
    return marks;
}

Status Section::find_fde_into(std::uint64_t pc, Fde& out) const {
    // The last FDE (in start order) whose start is <= pc.
    const std::uint32_t below = fdes_starting_at_or_below(pc);
    if (below == 0) return Error(Errc::NotFound, "no FDE covers " + to_hex(pc));
    const std::uint32_t index = order_.empty() ? below - 1 : order_[below - 1];
    if (auto st = decode_fde(index, out); !st) return st;
    if (pc >= out.end()) return Error(Errc::NotFound, "no FDE covers " + to_hex(pc));
    return ok();
}

Expected<Fde> Section::find_fde(std::uint64_t pc) const {
    Fde fde;
    if (auto st = find_fde_into(pc, fde); !st) return std::move(st).error();
    return fde;
}

template <typename Report>
bool Section::find_row(std::uint64_t pc, Row& row, const Report& fail) const {
    constexpr bool quiet = std::is_same_v<Report, Quiet>;
    // The last FDE (in start order) whose start is <= pc, if it covers pc.
    const std::uint32_t below = fdes_starting_at_or_below(pc);
    if (below == 0)
        return fail(
            Errc::NotFound, [&] { return "no FDE covers " + to_hex(pc); }, no_offset);
    const std::uint32_t index = order_.empty() ? below - 1 : order_[below - 1];
    if (fetcher_ != nullptr && !fetch_fde(index)) [[unlikely]] {
        if constexpr (quiet)
            return false;
        else
            return fail(fetch_error(index));
    }
    Fde fde;
    if constexpr (quiet) {
        if (!layout_->read_fde(geometry(), index, fde) ||
            !check_fde(*layout_, fde, fre_sub_, header_.fre_len, fail))
            return false;
    } else {
        if (auto st = decode_fde(index, fde); !st) return fail(std::move(st).error());
    }
    if (pc >= fde.end())
        return fail(
            Errc::NotFound, [&] { return "no FDE covers " + to_hex(pc); }, no_offset);

    std::uint64_t pc_offset = pc - fde.start;
    std::uint64_t block_base = 0;
    const bool mask = fde.pc_type == PcType::Mask;
    if (mask && fde.rep_size == 0 && fde.num_fres > 0)
        // Only v1 gets here (check_fde() refuses size 0 where the size is
        // stored), on an ABI for which no size is implied (layout_v1.cpp).
        return fail(
            Errc::Unsupported,
            [&] {
                return "FDE " + std::to_string(fde.index) +
                       ": PC-mask FDE without a repeat block size (SFrame v" +
                       std::to_string(static_cast<unsigned>(header_.version)) +
                       " stores none and implies none for " + std::string(abi_->name) + ")";
            },
            fde.entry_offset);
    if (mask && fde.num_fres > 0) {
        // Spec v3 section 2.3.3.1: PC % REP_BLOCK_SIZE >= FRE start. The
        // function start, not the PC, is the origin: the blocks are the
        // entries of the stub.
        block_base = pc_offset - pc_offset % fde.rep_size;
        pc_offset %= fde.rep_size;
    }
    if (fde.num_fres == 0) {
        if (layout_->empty_fde_is_outermost && fde.fde_type == FdeType::Default) {
            row.func_start = fde.start;
            row.func_size = fde.size;
            row.fde_index = fde.index;
            row.pc_begin = fde.start;
            row.pc_end = std::min(fde.end(), start_in_order(below));
            row.signal_frame = fde.signal;
            row.ra = RegRule::undefined();
            row.outermost = true;
            return true;
        }
        return fail(
            Errc::NotFound, [&] { return "FDE " + std::to_string(fde.index) + " has no FREs"; },
            fde.entry_offset);
    }

    const ByteView frev(view_.bytes().subspan(0, fre_sub_ + header_.fre_len), view_.order());
    const unsigned width = 1U << static_cast<unsigned>(fde.fre_type);
    // check_fde() saw to it that the FRE type is one of the three.
    const std::uint32_t marks = fre_marks_of(index, fde.fre_type, fde.fres_begin, fde.num_fres);
    const Scan found = scan(frev, fde.fre_type, fde.fres_begin, fde.num_fres, pc_offset, marks);
    if (found.unreadable) [[unlikely]] {
        if constexpr (!quiet) {
            Fre fre;
            if (auto st = decode_fre(fde, found.at, fre); !st)
                return fail(std::move(st).error()); // the precise error
        }
        return fail(
            Errc::Malformed,
            [&] {
                return "FRE " + std::to_string(found.index) + " of FDE " +
                       std::to_string(fde.index) + " is unreadable";
            },
            found.at);
    }
    if (found.index == 0) [[unlikely]]
        return fail(
            Errc::NotFound,
            [&] { return "no FRE of FDE " + std::to_string(fde.index) + " covers " + to_hex(pc); },
            fde.fres_begin);
    // The row ends where the next FRE starts, or at the end of the function
    // (of the repeat block, for PC-mask FDEs), and never past that end: a
    // corrupt start beyond it would stretch the row over the next function,
    // or wrap pc_end around the address space (pc < fde.end() above, so
    // fde.start + fde.size does not wrap).
    const std::uint64_t limit = mask ? fde.rep_size : fde.size;
    const std::uint64_t next_start =
        found.index < fde.num_fres ? std::min<std::uint64_t>(found.start, limit) : limit;

    // The chosen FRE's data words, read straight into the rules' view.
    const std::uint8_t info = found.chosen_info;
    const unsigned count = fre_info::word_count(info);
    const unsigned size = 1U << fre_info::size_code(info);
    const std::uint64_t words_at = found.chosen + width + 1U;
    std::array<std::int32_t, Fre::max_words> words; // the first `count` are read
    if (!read_words(frev, words_at, count, size, words.data())) [[unlikely]] {
        if constexpr (!quiet) {
            Fre fre;
            if (auto st = decode_fre(fde, found.chosen, fre); !st)
                return fail(std::move(st).error());
        }
        return fail(
            Errc::Truncated,
            [&] {
                return "FRE of FDE " + std::to_string(fde.index) + " runs past the FRE sub-section";
            },
            found.chosen);
    }
    const FreWords view{words.data(), count, size, !fre_info::cfa_base_sp(info)};
    fill_row_fields(fde, found.chosen_start, fre_info::mangled_ra(info), found.index - 1,
                    next_start, row);
    const RuleContext ctx{*abi_, header_, *layout_, found.chosen};
    if (fde.fde_type == FdeType::Flex) {
        if (auto st = read_flex_rules(ctx, view, row); !st) return fail(std::move(st).error());
    } else if (!default_rules(ctx, view, row, fail)) {
        return false;
    }
    row.pc_begin += block_base;
    row.pc_end = std::min(fde.start + std::min<std::uint64_t>(block_base + next_start, fde.size),
                          start_in_order(below));
    return true;
}

bool Section::quick_row(std::uint64_t pc, Row& row) const noexcept {
    if (!quick_v3_) return false;
    return view_.order() == ByteOrder::Little ? quick_v3<true>(pc, row) : quick_v3<false>(pc, row);
}

template <bool Little> bool Section::quick_v3(std::uint64_t pc, Row& row) const noexcept {
    constexpr auto order = Little ? boost::endian::order::little : boost::endian::order::big;
    // The FDE search with the v3 start reader fixed (8-byte fields in
    // 16-byte index records: with_start_reader()).
    std::uint32_t lo = 0;
    std::uint32_t n = header_.num_fdes;
    if (!page_range(pc, lo, n)) return false;
    const bool indexed = !order_.empty();
    const Starts s{view_, fde_sub_, vaddr_, header_.pcrel() ? ~std::uint64_t{0} : 0,
                   indexed ? order_.data() : nullptr};
    const StartAt<std::int64_t, v3::fde_size, order, false> start;
    const std::uint32_t below = indexed ? count_at_or_below<true>(s, start, lo, n, pc)
                                        : count_at_or_below<false>(s, start, lo, n, pc);
    if (below == 0) return false;
    const std::uint32_t index = indexed ? order_[below - 1] : below - 1;
    // A section read on demand: the FDE's data fetched first (find_row()
    // says why when that fails).
    if (fetcher_ != nullptr) [[unlikely]] {
        if (!fetch_fde(index)) return false;
    }
    FdeCore fde;
    if (!v3::read_core<order>(geometry(), index, fde)) return false;
    const unsigned fre_type = fde.info & 0xfU; // decode_info_common()
    // Past the end as find_row() sees it (Fde::end(), which a corrupt start
    // can wrap); below the start (a corrupt order), find_row() decides.
    if (pc < fde.start || pc >= fde.start + fde.size || fde.num_fres == 0 ||
        fre_type > static_cast<unsigned>(FreType::Addr4) || (fde.info & fde_info::pc_mask) != 0 ||
        (fde.info2 & fde_info::info2_fde_type) != static_cast<unsigned>(FdeType::Default))
        return false;
    const std::uint64_t pc_offset = pc - fde.start;

    // find_row() from here, for this case: the scan, the words, the rules.
    const ByteView frev(view_.bytes().subspan(0, fre_sub_ + header_.fre_len), view_.order());
    const std::uint32_t marks =
        fre_marks_of(index, static_cast<FreType>(fre_type), fde.fres_begin, fde.num_fres);
    const Scan found = scan<order>(frev.bytes(), static_cast<FreType>(fre_type), fde.fres_begin,
                                   fde.num_fres, pc_offset, marks);
    if (found.unreadable || found.index == 0) return false;
    const std::uint64_t next_start =
        found.index < fde.num_fres ? std::min<std::uint64_t>(found.start, fde.size) : fde.size;
    const std::uint8_t info = found.chosen_info;
    const unsigned count = fre_info::word_count(info);
    const unsigned size = 1U << fre_info::size_code(info);
    std::array<std::int32_t, Fre::max_words> words;
    if (!read_words<order>(frev, found.chosen + (1U << fre_type) + 1U, count, size, words.data()))
        return false;
    row.func_start = fde.start;
    row.func_size = fde.size;
    row.fde_index = index;
    row.fre_index = found.index - 1;
    row.pc_begin = fde.start + found.chosen_start;
    // Not past the next FDE's start (in start order, above pc), where FDEs
    // overlap: lookup() gives every PC in [pc_begin, pc_end) this row (Row).
    row.pc_end = std::min(fde.start + next_start, below < header_.num_fdes
                                                      ? start(s, indexed ? order_[below] : below)
                                                      : ~std::uint64_t{0});
    row.signal_frame = layout_->has_signal_bit && (fde.info & fde_info::signal) != 0;
    row.pauth_key_b = (fde.info & fde_info::pauth_key_b) != 0;
    row.mangled_ra = fre_info::mangled_ra(info);
    const FreWords view{words.data(), count, size, !fre_info::cfa_base_sp(info)};
    return default_rules(RuleContext{*abi_, header_, *layout_, found.chosen}, view, row, Quiet{});
}

Expected<Row> Section::lookup(std::uint64_t pc) const {
    // One object returned from every path, so that the row is built in the
    // caller's Expected and not copied there.
    Expected<Row> out{Row{}};
    if (quick_row(pc, *out)) [[likely]]
        return out;
    *out = Row{}; // quick_row() may have filled some of it
    if (!find_row(pc, *out, Quiet{})) [[unlikely]] {
        // Not found, or something in the way is malformed: the same steps
        // again, this time keeping the error.
        std::optional<Error> error;
        Row again;
        if (find_row(pc, again, Explain{error}))
            *out = again;
        else
            out = std::move(*error);
    }
    return out;
}

} // namespace sfunwind::sframe
