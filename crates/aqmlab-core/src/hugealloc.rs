//! `HugePageAlloc`: the global allocator of the `aqmlab-bench` binary and the Python
//! extension, which puts a large simulation's hot heap on transparent huge pages.
//!
//! With thousands of flows the per-packet cost is memory-bound: a packet touches its
//! connection's, its link's and its queue's lines, which lie on different 4 KiB pages,
//! so the page walks cost as much as the cache misses. Where the kernel runs transparent
//! huge pages in `madvise` mode (the common default), memory gets 2 MiB pages only if
//! it asks for them. A huge page is resident as a whole, though, so it also makes
//! resident whatever capacity around a block is reserved but never written (queues and
//! series reserve room ahead). Hence:
//!
//! - Blocks of up to [`SMALL_MAX`] bytes (alignment up to 64) come from size classes:
//!   16-byte steps up to 256 bytes, then eight classes per power of two; a class's
//!   blocks are aligned to the largest power of two dividing its size, at most 64, so a
//!   `repr(align(64))` structure fits its class. A class takes its blocks from its free
//!   list, else carves one from a bump region of 2 MiB-aligned [`CHUNK`]-byte mappings,
//!   touched only as far as they are carved. Freed blocks go to their class's free list
//!   and are not returned to the system.
//! - The classes up to [`COLD_ABOVE`] bytes (connections, flow and link state) carve
//!   from one region; once it passes [`HUGE_AFTER`] bytes its mappings are advised
//!   `MADV_HUGEPAGE` and the earlier ones collapsed into huge pages (`MADV_COLLAPSE`;
//!   where the kernel cannot, its background scan does it later). A smaller heap stays
//!   on 4 KiB pages: its page walks are cheap, and its resident memory is what matters.
//! - The larger classes (the preallocated queue rings and series, written only as far
//!   as they fill) carve from a second region that stays on 4 KiB pages.
//! - Blocks over [`SMALL_MAX`] bytes get their own 2 MiB-aligned mapping, advised;
//!   `realloc` between two such sizes moves the pages with `mremap` instead of copying.
//! - Alignments above 64 bytes (above 4 KiB for the large blocks: `mremap` may move a
//!   mapping to any page) go to the system allocator. The route depends only on the
//!   layout, so `dealloc` finds it again.
//! - A `fork` waits until no other thread is inside the allocator (`pthread_atfork`
//!   handlers take the lock before and release it after, in parent and child), so a
//!   child process (a sweep's pool worker) never inherits a held lock.
//!
//! The simulator allocates per flow, link and series, not per packet (a 10,000-flow run
//! makes a few hundred thousand allocations), so one spin lock around the classes is
//! cheap. Off Linux, `HugePageAlloc` is the system allocator.

use std::alloc::{GlobalAlloc, Layout, System};

/// The largest block served by a size class; larger blocks get their own mapping.
pub const SMALL_MAX: usize = 1 << 20;
/// The size of each mapping the size classes carve their blocks from.
pub const CHUNK: usize = 32 << 20;
/// The transparent huge page size the mappings are aligned to.
pub const HUGE_PAGE: usize = 2 << 20;
/// The page size: what `mremap` keeps of a large block's alignment.
pub const PAGE: usize = 4096;
/// The largest alignment a size class guarantees.
pub const CLASS_ALIGN: usize = 64;
/// The number of size classes.
pub const CLASSES: usize = 112;
/// The size-class heap moves to huge pages once its mappings would exceed this.
pub const HUGE_AFTER: usize = 64 << 20;
/// Classes above this size carve from their own region, which stays on 4 KiB pages.
pub const COLD_ABOVE: usize = 8 << 10;

/// The size class of a block of `size` bytes (`size <= SMALL_MAX`): 16-byte steps up to
/// 256 bytes, then eight classes per power of two.
pub fn class_of(size: usize) -> usize {
    debug_assert!(size <= SMALL_MAX);
    if size <= 256 {
        return size.max(1).div_ceil(16) - 1;
    }
    // size in (2^k, 2^(k+1)]
    let k = (usize::BITS - 1 - (size - 1).leading_zeros()) as usize;
    16 + 8 * (k - 8) + (size - (1 << k)).div_ceil(1 << (k - 3)) - 1
}

/// The block size of class `class`.
pub fn class_size(class: usize) -> usize {
    if class < 16 {
        return 16 * (class + 1);
    }
    let (k, j) = (8 + (class - 16) / 8, (class - 16) % 8 + 1);
    (1 << k) + j * (1 << (k - 3))
}

/// The alignment of every block of class `class`: the largest power of two dividing its
/// size, at most [`CLASS_ALIGN`]. A request of alignment `a <= CLASS_ALIGN` asks for
/// the class of its size rounded up to `a`, whose size `a` divides.
pub fn class_align(class: usize) -> usize {
    (1 << class_size(class).trailing_zeros()).min(CLASS_ALIGN)
}

/// How a layout is served.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Route {
    Class(usize),
    Large,
    System,
}

fn route(layout: Layout) -> Route {
    let (size, align) = (layout.size(), layout.align());
    if size <= SMALL_MAX {
        if align <= CLASS_ALIGN {
            Route::Class(class_of(size.max(1).next_multiple_of(align)))
        } else {
            Route::System
        }
    } else if align <= PAGE {
        Route::Large
    } else {
        Route::System
    }
}

/// The global allocator (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct HugePageAlloc;

#[cfg(not(target_os = "linux"))]
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        System.realloc(ptr, layout, new_size)
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    use std::cell::UnsafeCell;
    use std::ptr;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// `madvise` advice to collapse a range into huge pages now (Linux 6.1+).
    const MADV_COLLAPSE: libc::c_int = 25;
    /// How many chunks can be mapped before the heap moves to huge pages.
    const EARLY: usize = HUGE_AFTER / CHUNK;

    struct State {
        /// Head of each class's free list (the next pointer is a freed block's first word).
        free: [*mut u8; CLASSES],
        /// The bump region of the classes up to [`COLD_ABOVE`].
        hot: Bump,
        /// The bump region of the large classes, never advised.
        cold: Bump,
        /// The hot region's move to huge pages.
        early: Early,
        /// Whether the `fork` handlers are registered (on the first allocation).
        fork_handlers: bool,
    }

    /// A bump region: the next free byte and the end of the current chunk (0: none yet).
    struct Bump {
        next: usize,
        end: usize,
    }

    impl Bump {
        /// `size` bytes at `align`, from a new chunk `chunk(next)` (null: out of memory)
        /// when the current one cannot hold them.
        fn carve(
            &mut self,
            size: usize,
            align: usize,
            chunk: impl FnOnce(usize) -> *mut u8,
        ) -> *mut u8 {
            let mut at = round_up(self.next, align);
            if self.end == 0 || at + size > self.end {
                let c = chunk(self.next);
                if c.is_null() {
                    return ptr::null_mut();
                }
                at = c as usize;
                self.end = at + CHUNK;
            }
            self.next = at + size;
            at as *mut u8
        }
    }

    /// The hot region's chunks before it moves to huge pages.
    struct Early {
        /// Whether new chunks are advised for huge pages.
        huge: bool,
        /// The chunks mapped before that, and how many.
        chunks: [usize; EARLY],
        n: usize,
    }

    struct Heap {
        lock: AtomicBool,
        state: UnsafeCell<State>,
    }

    // SAFETY: `state` is only touched while `lock` is held.
    unsafe impl Sync for Heap {}

    static HEAP: Heap = Heap {
        lock: AtomicBool::new(false),
        state: UnsafeCell::new(State {
            free: [ptr::null_mut(); CLASSES],
            hot: Bump { next: 0, end: 0 },
            cold: Bump { next: 0, end: 0 },
            early: Early {
                huge: false,
                chunks: [0; EARLY],
                n: 0,
            },
            fork_handlers: false,
        }),
    };

    fn lock() {
        while HEAP
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
    }

    fn unlock() {
        HEAP.lock.store(false, Ordering::Release);
    }

    extern "C" fn fork_prepare() {
        lock();
    }

    extern "C" fn fork_after() {
        unlock();
    }

    fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
        lock();
        // SAFETY: the lock is held, so this is the only reference to the state.
        let s = unsafe { &mut *HEAP.state.get() };
        if !s.fork_handlers {
            s.fork_handlers = true;
            // SAFETY: plain functions without state; glibc keeps the registration in its
            // own memory, so this does not re-enter the allocator.
            unsafe {
                libc::pthread_atfork(Some(fork_prepare), Some(fork_after), Some(fork_after));
            }
        }
        let r = f(s);
        unlock();
        r
    }

    /// Holds the allocator's lock for `d` (tests: a fork in the meantime must wait).
    #[cfg(test)]
    pub(super) fn hold_lock_for(d: std::time::Duration) {
        with_state(|_| std::thread::sleep(d));
    }

    fn round_up(x: usize, to: usize) -> usize {
        (x + to - 1) & !(to - 1)
    }

    /// Maps `len` bytes (a multiple of 4 KiB) at a 2 MiB boundary, advised for huge pages
    /// if `huge`.
    unsafe fn map(len: usize, huge: bool) -> *mut u8 {
        let over = len + HUGE_PAGE;
        let p = libc::mmap(
            ptr::null_mut(),
            over,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return ptr::null_mut();
        }
        let start = p as usize;
        let aligned = round_up(start, HUGE_PAGE);
        if aligned > start {
            libc::munmap(p, aligned - start);
        }
        let tail = start + over - (aligned + len);
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
        if huge {
            // advice only: without transparent huge pages the mapping keeps 4 KiB pages
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        aligned as *mut u8
    }

    fn large_len(size: usize) -> usize {
        round_up(size, PAGE)
    }

    /// A new chunk for the hot bump region, whose next free byte is `next`. Past
    /// [`HUGE_AFTER`] the heap moves to huge pages: the new chunk is advised, and so are
    /// the earlier ones, whose touched part is collapsed into huge pages at once (where
    /// the kernel cannot, its background scan does it later).
    unsafe fn new_chunk(s: &mut Early, next: usize) -> *mut u8 {
        if !s.huge && s.n == EARLY {
            s.huge = true;
            for (i, &c) in s.chunks.iter().enumerate() {
                let used = if i + 1 == EARLY { next - c } else { CHUNK };
                let p = c as *mut libc::c_void;
                libc::madvise(p, CHUNK, libc::MADV_HUGEPAGE);
                libc::madvise(p, round_up(used, HUGE_PAGE), MADV_COLLAPSE);
            }
        }
        let chunk = map(CHUNK, s.huge);
        if !chunk.is_null() && !s.huge {
            s.chunks[s.n] = chunk as usize;
            s.n += 1;
        }
        chunk
    }

    /// A block of class `class`, and whether it is fresh (still zero) memory.
    unsafe fn class_alloc(class: usize) -> (*mut u8, bool) {
        let (size, align) = (class_size(class), class_align(class));
        with_state(|s| {
            let head = s.free[class];
            if !head.is_null() {
                s.free[class] = *(head as *mut *mut u8);
                return (head, false);
            }
            let p = if size > COLD_ABOVE {
                s.cold.carve(size, align, |_| map(CHUNK, false))
            } else {
                let early = &mut s.early;
                s.hot.carve(size, align, |next| new_chunk(early, next))
            };
            (p, !p.is_null())
        })
    }

    unsafe fn class_free(ptr: *mut u8, class: usize) {
        with_state(|s| {
            *(ptr as *mut *mut u8) = s.free[class];
            s.free[class] = ptr;
        })
    }

    unsafe impl GlobalAlloc for HugePageAlloc {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            match route(layout) {
                Route::Class(c) => class_alloc(c).0,
                Route::Large => map(large_len(layout.size()), true),
                Route::System => System.alloc(layout),
            }
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            match route(layout) {
                Route::Class(c) => {
                    let (p, fresh) = class_alloc(c);
                    if !p.is_null() && !fresh {
                        ptr::write_bytes(p, 0, layout.size());
                    }
                    p
                }
                // fresh mappings are zero; not touching them keeps them out of memory
                Route::Large => map(large_len(layout.size()), true),
                Route::System => System.alloc_zeroed(layout),
            }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            match route(layout) {
                Route::Class(c) => class_free(ptr, c),
                Route::Large => {
                    libc::munmap(ptr as *mut libc::c_void, large_len(layout.size()));
                }
                Route::System => System.dealloc(ptr, layout),
            }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            match (route(layout), route(new_layout)) {
                (Route::Class(a), Route::Class(b)) if a == b => ptr,
                (Route::System, Route::System) => System.realloc(ptr, layout, new_size),
                (Route::Large, Route::Large) => {
                    let (old, new) = (large_len(layout.size()), large_len(new_size));
                    if old == new {
                        return ptr;
                    }
                    let p = libc::mremap(ptr as *mut libc::c_void, old, new, libc::MREMAP_MAYMOVE);
                    if p == libc::MAP_FAILED {
                        ptr::null_mut()
                    } else {
                        p as *mut u8
                    }
                }
                _ => {
                    let p = self.alloc(new_layout);
                    if !p.is_null() {
                        ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    p
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_the_smallest_fit() {
        assert_eq!(class_size(CLASSES - 1), SMALL_MAX);
        let mut prev = 0;
        for c in 0..CLASSES {
            let s = class_size(c);
            assert!(s > prev, "class {c} size {s} not above {prev}");
            assert_eq!(class_of(s), c);
            assert_eq!(class_of(prev + 1), c, "size {} is in class {c}", prev + 1);
            assert_eq!(s % 16, 0);
            // at most an eighth (or 16 bytes) of waste
            assert!(s - (prev + 1) < (s / 8).max(16), "class {c}");
            prev = s;
        }
        assert_eq!(class_of(0), 0);
    }

    #[test]
    fn a_requests_class_is_as_aligned_as_the_request() {
        let sizes = (1..=70_000).chain([SMALL_MAX / 2 + 1, SMALL_MAX - 64, SMALL_MAX]);
        for size in sizes {
            for align in [1, 2, 4, 8, 16, 32, 64] {
                let l = Layout::from_size_align(size, align).unwrap();
                let Route::Class(c) = route(l) else {
                    panic!("size {size} align {align}")
                };
                assert!(class_size(c) >= size);
                assert_eq!(class_size(c) % class_align(c), 0);
                assert_eq!(class_align(c) % align, 0, "size {size} align {align}");
            }
        }
    }

    #[test]
    fn routes_follow_size_and_alignment() {
        let r = |s, a| route(Layout::from_size_align(s, a).unwrap());
        assert_eq!(r(24, 8), Route::Class(1));
        assert_eq!(r(8, 64), Route::Class(3));
        assert_eq!(r(72, 64), Route::Class(7));
        assert_eq!(r(100, 128), Route::System);
        assert_eq!(r(SMALL_MAX, 8), Route::Class(CLASSES - 1));
        assert_eq!(r(SMALL_MAX + 1, 8), Route::Large);
        assert_eq!(r(SMALL_MAX + 1, PAGE), Route::Large);
        // `mremap` keeps only page alignment, so a larger one is the system's
        assert_eq!(r(SMALL_MAX + 1, 2 * PAGE), Route::System);
        assert_eq!(r(SMALL_MAX + 1, 4 * HUGE_PAGE), Route::System);
    }

    fn fill(p: *mut u8, n: usize, seed: u8) {
        for i in 0..n {
            unsafe { *p.add(i) = seed.wrapping_add(i as u8) };
        }
    }

    fn check(p: *const u8, n: usize, seed: u8) {
        for i in 0..n {
            assert_eq!(unsafe { *p.add(i) }, seed.wrapping_add(i as u8), "byte {i}");
        }
    }

    #[test]
    fn blocks_are_aligned_distinct_and_keep_contents() {
        let a = HugePageAlloc;
        let sizes = [
            1,
            8,
            16,
            17,
            63,
            64,
            65,
            200,
            1000,
            5120,
            70_000,
            SMALL_MAX,
            SMALL_MAX + 1,
            5 << 20,
        ];
        let mut live = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            for align in [1, 8, 16, 64, 128, 4096] {
                let l = Layout::from_size_align(size, align).unwrap();
                let p = unsafe { a.alloc(l) };
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0, "size {size} align {align}");
                fill(p, size, i as u8);
                live.push((p, l, i as u8));
            }
        }
        let mut ranges: Vec<(usize, usize)> = live
            .iter()
            .map(|&(p, l, _)| (p as usize, p as usize + l.size()))
            .collect();
        ranges.sort_unstable();
        for w in ranges.windows(2) {
            assert!(w[0].1 <= w[1].0, "blocks overlap: {w:?}");
        }
        for &(p, l, seed) in &live {
            check(p, l.size(), seed);
            unsafe { a.dealloc(p, l) };
        }
    }

    #[test]
    fn realloc_keeps_contents_across_routes() {
        let a = HugePageAlloc;
        // grow through classes, into a mapping, grow the mapping, shrink back to a class
        let steps = [
            10,
            48,
            100,
            3000,
            3100,
            900_000,
            SMALL_MAX + 10,
            6 << 20,
            7 << 20,
            2 << 20,
            4000,
            20,
        ];
        for align in [8, 64, 256] {
            let mut l = Layout::from_size_align(steps[0], align).unwrap();
            let p0 = unsafe { a.alloc(l) };
            fill(p0, l.size(), 7);
            let mut p = p0;
            for &n in &steps[1..] {
                let kept = l.size().min(n);
                let q = unsafe { a.realloc(p, l, n) };
                assert!(!q.is_null());
                assert_eq!(q as usize % align, 0);
                check(q, kept, 7);
                l = Layout::from_size_align(n, align).unwrap();
                fill(q, n, 7);
                p = q;
            }
            unsafe { a.dealloc(p, l) };
        }
    }

    #[test]
    fn freed_blocks_are_reused_and_zeroed_on_request() {
        let a = HugePageAlloc;
        // a class no other test uses, so that parallel tests do not take the block
        let l = Layout::from_size_align(class_size(82) - 3, 8).unwrap();
        let p = unsafe { a.alloc(l) };
        fill(p, l.size(), 1);
        unsafe { a.dealloc(p, l) };
        let q = unsafe { a.alloc_zeroed(l) };
        assert_eq!(q, p, "the freed block comes back first");
        check_zero(q, l.size());
        unsafe { a.dealloc(q, l) };
        let big = Layout::from_size_align(3 << 20, 8).unwrap();
        let b = unsafe { a.alloc_zeroed(big) };
        check_zero(b, big.size());
        unsafe { a.dealloc(b, big) };
    }

    #[test]
    fn blocks_keep_contents_when_the_heap_moves_to_huge_pages() {
        let a = HugePageAlloc;
        // the largest class of the region that moves, past its threshold
        let l = Layout::from_size_align(COLD_ABOVE - 64, 64).unwrap();
        let n = (HUGE_AFTER + CHUNK) / COLD_ABOVE;
        let blocks: Vec<*mut u8> = (0..n).map(|_| unsafe { a.alloc(l) }).collect();
        for (i, &p) in blocks.iter().enumerate() {
            assert!(!p.is_null());
            unsafe {
                *p = i as u8;
                *p.add(l.size() - 1) = !(i as u8);
            }
        }
        for (i, &p) in blocks.iter().enumerate() {
            unsafe {
                assert_eq!((*p, *p.add(l.size() - 1)), (i as u8, !(i as u8)));
                a.dealloc(p, l);
            }
        }
    }

    fn check_zero(p: *const u8, n: usize) {
        assert!((0..n).all(|i| unsafe { *p.add(i) } == 0));
    }

    /// A fork while another thread is inside the allocator waits for it: the child can
    /// allocate (it would spin for ever on an inherited held lock).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_fork_does_not_inherit_a_held_lock() {
        use std::time::{Duration, Instant};
        let a = HugePageAlloc;
        let l = Layout::from_size_align(48, 8).unwrap();
        // registers the fork handlers
        unsafe { a.dealloc(a.alloc(l), l) };
        let holder = std::thread::spawn(|| super::imp::hold_lock_for(Duration::from_millis(200)));
        std::thread::sleep(Duration::from_millis(50));
        // SAFETY: the child only allocates, frees and exits without unwinding.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            unsafe {
                let p = a.alloc(l);
                a.dealloc(p, l);
                libc::_exit(if p.is_null() { 1 } else { 0 });
            }
        }
        let start = Instant::now();
        let mut status = 0;
        loop {
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            if start.elapsed() > Duration::from_secs(10) {
                unsafe { libc::kill(pid, libc::SIGKILL) };
                unsafe { libc::waitpid(pid, &mut status, 0) };
                panic!(
                    "the child did not finish allocating: the allocator's lock was inherited held"
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        holder.join().unwrap();
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
}
