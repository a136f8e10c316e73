//! Streaming metric collectors. Their memory does not grow with simulated time except for
//! outputs the user asked for (time-series bins, probe samples, opt-in traces).

use crate::time::{SimDuration, SimTime};

/// Log-linear histogram of non-negative integer values (nanoseconds): values below 64 are
/// exact, above that each power of two is split into 64 sub-buckets (relative error
/// < 1.6 %). Also keeps the exact count, sum, min and max.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    pub count: u64,
    pub sum: u128,
    pub min: u64,
    pub max: u64,
}

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Self {
        Histogram {
            counts: Vec::new(),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
    fn bucket(v: u64) -> usize {
        if v < SUB {
            v as usize
        } else {
            let exp = 63 - v.leading_zeros(); // >= SUB_BITS
            let shift = exp - SUB_BITS;
            let sub = (v >> shift) - SUB; // 0..SUB
            ((exp - SUB_BITS + 1) as u64 * SUB + sub) as usize
        }
    }
    /// Lower edge of bucket `i`.
    pub fn bucket_low(i: usize) -> u64 {
        let i = i as u64;
        if i < SUB {
            i
        } else {
            let group = i / SUB; // >= 1
            let sub = i % SUB;
            let shift = group - 1;
            (SUB + sub) << shift
        }
    }
    /// Upper edge (exclusive) of bucket `i`.
    pub fn bucket_high(i: usize) -> u64 {
        Self::bucket_low(i + 1)
    }
    #[inline]
    pub fn record(&mut self, v: u64) {
        let b = Self::bucket(v);
        if b >= self.counts.len() {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
    /// `n` records of the value 0: what `record(0)` `n` times leaves.
    pub fn record_zeros(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        if self.counts.is_empty() {
            self.counts.resize(1, 0);
        }
        self.counts[0] += n;
        self.count += n;
        self.min = 0;
    }
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            f64::NAN
        } else {
            self.sum as f64 / self.count as f64
        }
    }
    /// The q-quantile (0..=1), interpolated linearly inside the bucket.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        let target = (q.clamp(0.0, 1.0) * self.count as f64).max(1.0);
        let mut acc = 0.0;
        for (i, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            if acc + c as f64 >= target {
                let lo = Self::bucket_low(i) as f64;
                let hi = Self::bucket_high(i) as f64;
                let frac = (target - acc) / c as f64;
                let v = lo + (hi - lo) * frac;
                return v.clamp(self.min as f64, self.max as f64);
            }
            acc += c as f64;
        }
        self.max as f64
    }
    /// Non-empty buckets as `(low, high, count)`.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (Self::bucket_low(i), Self::bucket_high(i), c))
    }
}

/// Fixed-width time bins that grow as simulated time advances.
#[derive(Clone, Debug)]
pub struct Bins {
    pub width: SimDuration,
    pub values: Vec<f64>,
    /// The last bin touched: its index and its time range `[lo, hi)` in ns (`lo == hi`
    /// until the first record). Records mostly fall in the same bin as the previous one,
    /// so this skips the 64-bit division; `values` only grows, so `idx` stays valid.
    lo: u64,
    hi: u64,
    idx: usize,
}

impl Bins {
    pub fn new(width: SimDuration) -> Self {
        Bins {
            width,
            values: Vec::new(),
            lo: 0,
            hi: 0,
            idx: 0,
        }
    }
    /// Index of the bin holding `t`, growing `values` to hold it.
    #[inline(always)]
    fn slot(&mut self, t: SimTime) -> usize {
        let t = t.as_nanos();
        if t >= self.lo && t < self.hi {
            return self.idx;
        }
        self.locate(t)
    }
    #[inline(never)]
    fn locate(&mut self, t: u64) -> usize {
        let w = self.width.as_nanos().max(1);
        let i = (t / w) as usize;
        if i >= self.values.len() {
            grow(&mut self.values, i + 1);
        }
        self.lo = (i as u64) * w;
        self.hi = self.lo.saturating_add(w);
        self.idx = i;
        i
    }
    #[inline]
    pub fn add(&mut self, t: SimTime, v: f64) {
        let i = self.slot(t);
        self.values[i] += v;
    }
    #[inline]
    pub fn max(&mut self, t: SimTime, v: f64) {
        let i = self.slot(t);
        if v > self.values[i] {
            self.values[i] = v;
        }
    }
    /// Reserves room for every bin up to the one holding `end` (the run's end), so the
    /// series never reallocates while the run records into it; nothing is written, so an
    /// unused series costs address space, not memory. (Growing by doubling instead cost
    /// ~15 % of a 1024-flow run's time when links' series were `Bins` too; they are
    /// [`LinkSeries`] now.)
    pub fn reserve_until(&mut self, end: SimTime) {
        let n = (end.as_nanos() / self.width.as_nanos().max(1)) as usize + 1;
        if n > self.values.len() {
            // a failure leaves the series to grow as it goes (and `grow` to report it)
            let _ = self.values.try_reserve_exact(n - self.values.len());
        }
    }
    /// Pads with zero bins up to (but excluding) the bin that contains `end`.
    pub fn pad_to(&mut self, end: SimTime) {
        let n = end.as_nanos().div_ceil(self.width.as_nanos().max(1)) as usize;
        if self.values.len() < n {
            grow(&mut self.values, n);
        }
    }
}

/// Resizes `v` to `n` zeros at the end, reserving fallibly: if the memory is not there
/// (which the resource model in `crate::resources` should have prevented) this panics,
/// which the Python binding reports as a `SimulationError`, instead of aborting the
/// process as `Vec::resize` would.
#[cold]
fn grow(v: &mut Vec<f64>, n: usize) {
    if v.try_reserve(n - v.len()).is_err() {
        panic!("out of memory for {n} time-series bins (the resource model underestimated this scenario)");
    }
    v.resize(n, 0.0);
}

/// One time bin of a link's series ([`LinkSeries`]). Counts are integers: the dense
/// `f64` series the results carry are these values converted, which is exact (a sum of
/// integer sizes in `f64` is exact below 2^53, i.e. 9 PB per bin).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct LinkBin {
    /// IP bytes transmitted.
    pub tx_bytes: u64,
    /// Sum of qdisc sojourn times (ns) of the packets dequeued; `f64` as it always was,
    /// so the per-bin mean is computed from the same rounded sum.
    pub sojourn_sum: f64,
    /// Packets dequeued.
    pub sojourn_n: u32,
    /// Packets dropped.
    pub drops: u32,
    /// Largest qdisc backlog (packets) an arrival left.
    pub backlog_max: u32,
    /// The bin's index (its start is `index × width`).
    index: u32,
}

/// Field selectors of [`LinkSeries::dense`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LinkField {
    TxBytes,
    Sojourn,
    Drops,
    BacklogMax,
}

/// A link's per-bin series (bytes sent, sojourn sum and count, drops, largest backlog),
/// stored sparsely: one 32-byte [`LinkBin`] per bin in which the link recorded anything,
/// in time order. Most links of a large topology (access links at a few packets a second)
/// touch a small share of the run's bins, so this holds the 4,096 access links of a
/// 1024-flow dumbbell in a fraction of the 4 × 8 bytes × every bin a dense layout needs;
/// a busy link pays 4 bytes per bin for the index. One cached bin serves all four
/// series, since a packet's enqueue, dequeue and transmission mostly fall in one bin.
///
/// The dense series ([`LinkSeries::dense`]) are exactly what four dense `f64` series
/// padded to the run's end gave: each field remembers the highest bin it touched, so a
/// record at the run's last instant lengthens only its own series.
///
/// Laid out in declaration order (`repr(C)`): what `merge_bin` reads (the storage, the
/// lengths, the last bin's index and the width) comes first, in 56 bytes, so that a
/// link's write-back of a new bin reads one line of the series and writes its last bin.
#[derive(Clone)]
#[repr(C)]
pub struct LinkSeries {
    bins: Vec<LinkBin>,
    /// Per field (in [`LinkField`] order): one past the highest bin index it recorded in.
    len: [u32; 4],
    /// The index of the last bin (`bins[bins.len() - 1].index`; 0 while there is none).
    last: u32,
    width: u64,
    /// Cached bin: `bins[cur]` covers `[lo, hi)` ns (`lo == hi` before the first record).
    lo: u64,
    hi: u64,
    cur: usize,
}

/// The series' contents (width, bins, lengths), without its cached bin: two series
/// that recorded the same values print the same whichever bins they last looked up.
impl std::fmt::Debug for LinkSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkSeries")
            .field("width", &self.width)
            .field("bins", &self.bins)
            .field("len", &self.len)
            .finish()
    }
}

impl LinkSeries {
    /// Bins the series makes room for at its first record (512 bytes), so a link that
    /// records in a few dozen bins grows its storage a couple of times, not six.
    const FIRST_ROOM: usize = 16;
    pub fn new(width: SimDuration) -> Self {
        LinkSeries {
            bins: Vec::new(),
            len: [0; 4],
            last: 0,
            width: width.as_nanos().max(1),
            lo: 0,
            hi: 0,
            cur: 0,
        }
    }
    /// The bin holding `t` (created if new), and the field's length updated.
    #[inline(always)]
    fn at(&mut self, t: SimTime, field: LinkField) -> &mut LinkBin {
        let t = t.as_nanos();
        if !(t >= self.lo && t < self.hi) {
            self.locate(t);
        }
        let b = &mut self.bins[self.cur];
        let l = &mut self.len[field as usize];
        if b.index >= *l {
            *l = b.index + 1;
        }
        b
    }
    /// Bin number `i` as stored (a link holds at most 2^32 bins).
    #[inline(always)]
    fn bin_number(i: u64) -> u32 {
        let Ok(index) = u32::try_from(i) else {
            panic!("time-series bin {i} is past the 2^32 a link can hold (the resource model should have refused this run.bin)");
        };
        index
    }
    /// Appends an empty bin `index` (past every stored one) and returns its position.
    #[inline(always)]
    fn append_bin(&mut self, index: u32) -> usize {
        let n = self.bins.len();
        let room = if n == 0 { Self::FIRST_ROOM } else { 1 };
        if self.bins.try_reserve(room).is_err() {
            panic!("out of memory for a link's time-series bins (the resource model underestimated this scenario)");
        }
        self.bins.push(LinkBin {
            index,
            ..LinkBin::default()
        });
        self.last = index;
        n
    }
    /// The position of bin `index` among the stored ones, inserted empty in order if
    /// new (then `true`).
    fn find_or_insert_bin(&mut self, index: u32) -> (usize, bool) {
        match self.bins.binary_search_by_key(&index, |b| b.index) {
            Ok(k) => (k, false),
            Err(k) => {
                self.bins.insert(
                    k,
                    LinkBin {
                        index,
                        ..LinkBin::default()
                    },
                );
                (k, true)
            }
        }
    }
    #[inline(never)]
    fn locate(&mut self, t: u64) {
        let i = t / self.width;
        let index = Self::bin_number(i);
        let n = self.bins.len();
        self.cur = if n > 0 && self.last == index {
            n - 1
        } else if n == 0 || self.last < index {
            // the common case: time moved on into a new bin
            self.append_bin(index)
        } else if n >= 2 && self.bins[n - 2].index == index {
            // back one bin: a lazy link counts a transmission once its end has passed,
            // which is often just before the bin its next packet opened
            n - 2
        } else {
            self.find_or_insert_bin(index).0
        };
        self.lo = i * self.width;
        self.hi = self.lo.saturating_add(self.width);
    }
    /// For a caller that keeps the bin it records into in a cache of its own and writes
    /// it back (a lazy link, whose per-packet state is one block): the bin holding `t`
    /// (created if new, as a record creates it) and its range `[lo, hi)` in ns. The
    /// fields whose bit (`1 << LinkField as u8`) is set in `recorded` count as recorded
    /// in it, as if `tx`, `sojourn`, `drop` or `backlog` had been called.
    #[inline(never)]
    pub fn bin_mut(&mut self, t: SimTime, recorded: u8) -> (&mut LinkBin, u64, u64) {
        let tn = t.as_nanos();
        if !(tn >= self.lo && tn < self.hi) {
            self.locate(tn);
        }
        let b = &mut self.bins[self.cur];
        for (f, l) in self.len.iter_mut().enumerate() {
            if recorded & (1 << f) != 0 && b.index >= *l {
                *l = b.index + 1;
            }
        }
        (b, self.lo, self.hi)
    }
    /// For a caller whose cache of a bin started from zeros without looking it up (a
    /// lazy link moving on to a later bin): adds the cached records `v` to the bin
    /// starting at `lo` ns (created if new), as recording them one by one would have —
    /// bytes and packets added, the largest backlog kept — and counts the fields set in
    /// `recorded` as recorded. The sojourn sum is added too: sums of whole nanoseconds
    /// are exact in `f64`, so the total does not depend on the grouping (and the bin
    /// holds none when it was only reached by drops and late transmissions). Compares
    /// with the series' last bin, not its cached one: such a bin is mostly a new one,
    /// appended without reading the storage.
    #[inline(never)]
    pub fn merge_bin(
        &mut self,
        lo: u64,
        tx_bytes: u64,
        sojourn_sum: f64,
        sojourn_n: u32,
        backlog_max: u32,
        recorded: u8,
    ) {
        let index = Self::bin_number(lo / self.width);
        let n = self.bins.len();
        let k = if n == 0 || self.last < index {
            self.append_bin(index)
        } else if self.last == index {
            n - 1
        } else {
            let (k, inserted) = self.find_or_insert_bin(index);
            if inserted {
                // (the series' own cached bin may have moved up one place)
                self.lo = 0;
                self.hi = 0;
            }
            k
        };
        let b = &mut self.bins[k];
        b.tx_bytes += tx_bytes;
        b.sojourn_sum += sojourn_sum;
        b.sojourn_n += sojourn_n;
        b.backlog_max = b.backlog_max.max(backlog_max);
        for (f, l) in self.len.iter_mut().enumerate() {
            if recorded & (1 << f) != 0 && index >= *l {
                *l = index + 1;
            }
        }
    }
    /// `bytes` transmitted at `t`.
    #[inline(always)]
    pub fn tx(&mut self, t: SimTime, bytes: u32) {
        self.at(t, LinkField::TxBytes).tx_bytes += bytes as u64;
    }
    /// A packet left the qdisc at `t` after `sojourn_ns`.
    #[inline(always)]
    pub fn sojourn(&mut self, t: SimTime, sojourn_ns: u64) {
        let b = self.at(t, LinkField::Sojourn);
        b.sojourn_sum += sojourn_ns as f64;
        b.sojourn_n += 1;
    }
    /// A packet was dropped at `t`.
    #[inline]
    pub fn drop(&mut self, t: SimTime) {
        self.at(t, LinkField::Drops).drops += 1;
    }
    /// An arrival at `t` left `packets` in the qdisc.
    #[inline(always)]
    pub fn backlog(&mut self, t: SimTime, packets: usize) {
        let b = self.at(t, LinkField::BacklogMax);
        let n = u32::try_from(packets).unwrap_or(u32::MAX);
        if n > b.backlog_max {
            b.backlog_max = n;
        }
    }
    /// The bins touched so far, in time order.
    pub fn bins(&self) -> &[LinkBin] {
        &self.bins
    }
    /// Index of `b` (its start is `index × width`).
    pub fn index_of(b: &LinkBin) -> usize {
        b.index as usize
    }
    /// One field as a dense series from time 0: zeros where nothing was recorded, padded
    /// up to (excluding) the bin that contains `end`, and longer if the field recorded
    /// in a later bin (a record at `end` itself) — what [`Bins`] and
    /// [`Bins::pad_to`] give.
    /// `empty` fills the bins without a record.
    pub fn dense(
        &self,
        field: LinkField,
        end: SimTime,
        empty: f64,
        value: impl Fn(&LinkBin) -> f64,
    ) -> Vec<f64> {
        let n =
            (end.as_nanos().div_ceil(self.width) as usize).max(self.len[field as usize] as usize);
        let mut v = Vec::new();
        if v.try_reserve_exact(n).is_err() {
            panic!("out of memory for {n} time-series bins (the resource model underestimated this scenario)");
        }
        v.resize(n, empty);
        for b in self.bins.iter().take_while(|b| (b.index as usize) < n) {
            v[b.index as usize] = value(b);
        }
        v
    }
}

/// A long-format table of time-stamped values: one row per (entity, metric, t).
/// `kind` says what `entity` indexes: 0 = flow, 1 = queue/link.
#[derive(Clone, Debug, Default)]
pub struct LongTable {
    pub kind: Vec<u8>,
    pub entity: Vec<u32>,
    pub metric: Vec<u16>,
    pub t: Vec<f64>,
    pub value: Vec<f64>,
}

pub const KIND_FLOW: u8 = 0;
pub const KIND_QUEUE: u8 = 1;

impl LongTable {
    pub fn push(&mut self, kind: u8, entity: u32, metric: u16, t: f64, value: f64) {
        self.kind.push(kind);
        self.entity.push(entity);
        self.metric.push(metric);
        self.t.push(t);
        self.value.push(value);
    }
    pub fn len(&self) -> usize {
        self.t.len()
    }
    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }
}

/// Interned metric names for the long tables.
#[derive(Clone, Debug, Default)]
pub struct MetricNames(pub Vec<String>);

impl MetricNames {
    pub fn id(&mut self, name: &str) -> u16 {
        if let Some(i) = self.0.iter().position(|n| n == name) {
            return i as u16;
        }
        self.0.push(name.to_string());
        (self.0.len() - 1) as u16
    }
}

/// Jain's fairness index of a set of non-negative values: (Σx)² / (n Σx²).
pub fn jain_index(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if s2 == 0.0 {
        return 1.0;
    }
    s * s / (n * s2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_close() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        assert_eq!(h.count, 100_000);
        assert!((h.mean() - 50_000_500.0).abs() < 1.0);
        for (q, exact) in [
            (0.5, 50_000_000.0),
            (0.9, 90_000_000.0),
            (0.99, 99_000_000.0),
        ] {
            let got = h.quantile(q);
            assert!((got - exact).abs() / exact < 0.02, "q{q}: {got} vs {exact}");
        }
        assert_eq!(h.quantile(1.0), 100_000_000.0);
        // bucket edges are contiguous
        for i in 0..500 {
            assert_eq!(Histogram::bucket_high(i), Histogram::bucket_low(i + 1));
            assert!(Histogram::bucket(Histogram::bucket_low(i)) == i);
        }
    }

    #[test]
    fn jain() {
        assert!((jain_index(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
    }

    /// A series reserved up to the run's end records the same values and never moves
    /// its storage while the run records into it, up to and including the end instant.
    #[test]
    fn reserved_bins_do_not_reallocate() {
        let w = SimDuration::from_millis(200);
        let end = SimTime::from_nanos(100_000_000_000);
        let (mut r, mut g) = (Bins::new(w), Bins::new(w));
        r.reserve_until(end);
        let at = r.values.as_ptr();
        let cap = r.values.capacity();
        assert!(cap >= 501 && r.values.is_empty());
        for k in 0..=1000u64 {
            let t = SimTime::from_nanos(k * 100_000_000);
            r.add(t, k as f64);
            g.add(t, k as f64);
        }
        assert_eq!(r.values, g.values);
        assert_eq!((r.values.as_ptr(), r.values.capacity()), (at, cap));
    }

    /// The cached bin gives the same sums and maxima as dividing every time, with times
    /// that jump forward, step back into earlier bins and land on bin edges.
    #[test]
    fn bins_cache_matches_direct_division() {
        let w = 200_000_000u64;
        let mut b = Bins::new(SimDuration::from_nanos(w));
        let mut sum = vec![0.0f64; 0];
        let mut mx = Bins::new(SimDuration::from_nanos(w));
        let mut mref = vec![0.0f64; 0];
        let mut x: u64 = 12345;
        let mut t: u64 = 0;
        for k in 0..50_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            t = match (x >> 60) % 4 {
                0 => t.saturating_sub((x >> 8) % (3 * w)), // back, possibly across bins
                1 => (t / w + 1) * w,                      // exactly on the next edge
                _ => t + (x >> 20) % (w / 3),
            };
            let v = (k % 97) as f64;
            b.add(SimTime::from_nanos(t), v);
            mx.max(SimTime::from_nanos(t), v);
            let i = (t / w) as usize;
            if i >= sum.len() {
                sum.resize(i + 1, 0.0);
                mref.resize(i + 1, 0.0);
            }
            sum[i] += v;
            if v > mref[i] {
                mref[i] = v;
            }
        }
        assert_eq!(b.values, sum);
        assert_eq!(mx.values, mref);
    }

    /// The sparse link series gives exactly the dense `f64` series the four [`Bins`] gave
    /// (same sums, maxima, counts, lengths), with times that jump ahead, step back into
    /// earlier bins (as a lazy link's transmission count does), skip bins, land on bin
    /// edges and end with records at the run's last instant, which lengthen only the
    /// series they touch.
    /// Records gathered per bin and added with `merge_bin` (a lazy link's fresh bins)
    /// leave the series exactly as recording them one by one: with drops recorded
    /// straight into the same bins meanwhile, bins revisited later, and time going back.
    #[test]
    fn merged_bins_equal_single_records() {
        let w = 1_000_000u64;
        let d = SimDuration::from_nanos(w);
        let (mut direct, mut merged) = (LinkSeries::new(d), LinkSeries::new(d));
        // the gathered bin: its start, bytes, sojourn sum and count, backlog, fields
        let mut acc: Option<(u64, u64, f64, u32, u32, u8)> = None;
        let mut x: u64 = 0x9e3779b97f4a7c15;
        let mut t: u64 = 5 * w;
        for k in 0..30_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t = match x % 16 {
                0 => t.saturating_sub((x >> 8) % (3 * w)),
                1..=3 => t + (x >> 12) % (2 * w),
                _ => t + (x >> 20) % (w / 20),
            };
            let at = SimTime::from_nanos(t);
            let lo = t / w * w;
            if acc.is_some_and(|a| a.0 != lo) || x.is_multiple_of(97) {
                let (a_lo, tx, ss, sn, bl, rec) = acc.take().unwrap_or((lo, 0, 0.0, 0, 0, 0));
                if rec != 0 {
                    merged.merge_bin(a_lo, tx, ss, sn, bl, rec);
                }
            }
            let a = acc.get_or_insert((lo, 0, 0.0, 0, 0, 0));
            match (x >> 40) % 4 {
                0 => {
                    let size = 40 + (k % 1460) as u32;
                    direct.tx(at, size);
                    a.1 += size as u64;
                    a.5 |= 1 << LinkField::TxBytes as u8;
                }
                1 => {
                    let soj = (x >> 24) % 50_000_000;
                    direct.sojourn(at, soj);
                    a.2 += soj as f64;
                    a.3 += 1;
                    a.5 |= 1 << LinkField::Sojourn as u8;
                }
                2 => {
                    direct.drop(at);
                    merged.drop(at);
                }
                _ => {
                    let n = ((x >> 32) % 100) as u32;
                    direct.backlog(at, n as usize);
                    a.4 = a.4.max(n);
                    a.5 |= 1 << LinkField::BacklogMax as u8;
                }
            }
        }
        if let Some((a_lo, tx, ss, sn, bl, rec)) = acc {
            merged.merge_bin(a_lo, tx, ss, sn, bl, rec);
        }
        assert!(direct.bins().len() > 1_000, "{}", direct.bins().len());
        assert_eq!(format!("{direct:?}"), format!("{merged:?}"));
    }

    /// `merge_bin` reads the first 56 bytes of the series (storage, lengths, last
    /// index, width), which a link keeps in one cache line.
    #[test]
    fn merge_fields_lead_the_series() {
        use std::mem::offset_of;
        assert_eq!(offset_of!(LinkSeries, bins), 0);
        for off in [
            offset_of!(LinkSeries, len),
            offset_of!(LinkSeries, last),
            offset_of!(LinkSeries, width),
        ] {
            assert!(off + 8 <= 56, "offset {off}");
        }
        assert_eq!(offset_of!(LinkSeries, width), 48);
    }

    #[test]
    fn link_series_matches_dense_bins() {
        let w = 200_000_000u64;
        let end = SimTime::from_nanos(40 * w); // a multiple of the width: records at `end` open bin 40
        let d = SimDuration::from_nanos(w);
        let mut ls = LinkSeries::new(d);
        let (mut tx, mut ss, mut sn, mut dr, mut bl) = (
            Bins::new(d),
            Bins::new(d),
            Bins::new(d),
            Bins::new(d),
            Bins::new(d),
        );
        let mut x: u64 = 0x2545f4914f6cdd1d;
        let mut t: u64 = 0;
        for k in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t = match x % 8 {
                0 => t.saturating_sub((x >> 8) % (2 * w)),
                1 => (t / w + 1) * w,
                2 => t + (x >> 16) % (3 * w),
                _ => t + (x >> 20) % (w / 50),
            }
            .min(end.as_nanos() - 1);
            let at = SimTime::from_nanos(t);
            match (x >> 40) % 4 {
                0 => {
                    let size = 40 + (k % 1460) as u32;
                    ls.tx(at, size);
                    tx.add(at, size as f64);
                }
                1 => {
                    let soj = (x >> 24) % 50_000_000;
                    ls.sojourn(at, soj);
                    ss.add(at, soj as f64);
                    sn.add(at, 1.0);
                }
                2 => {
                    ls.drop(at);
                    dr.add(at, 1.0);
                }
                _ => {
                    let n = ((x >> 32) % 100) as usize;
                    ls.backlog(at, n);
                    bl.max(at, n as f64);
                }
            }
        }
        // only the transmission series records at the run's end
        ls.tx(end, 1500);
        tx.add(end, 1500.0);
        for b in [&mut tx, &mut ss, &mut sn, &mut dr, &mut bl] {
            b.pad_to(end);
        }
        assert_eq!(tx.values.len(), 41);
        assert_eq!(dr.values.len(), 40);
        let f = |b: &LinkBin| b.tx_bytes as f64;
        assert_eq!(ls.dense(LinkField::TxBytes, end, 0.0, f), tx.values);
        let f = |b: &LinkBin| b.drops as f64;
        assert_eq!(ls.dense(LinkField::Drops, end, 0.0, f), dr.values);
        let f = |b: &LinkBin| b.backlog_max as f64;
        assert_eq!(ls.dense(LinkField::BacklogMax, end, 0.0, f), bl.values);
        let f = |b: &LinkBin| b.sojourn_sum;
        assert_eq!(ls.dense(LinkField::Sojourn, end, 0.0, f), ss.values);
        let f = |b: &LinkBin| b.sojourn_n as f64;
        assert_eq!(ls.dense(LinkField::Sojourn, end, 0.0, f), sn.values);
        // sparse: one record per touched bin, in time order
        let idx: Vec<usize> = ls.bins().iter().map(LinkSeries::index_of).collect();
        assert!(idx.windows(2).all(|p| p[0] < p[1]), "{idx:?}");
        // a series with no record is all `empty`, padded to the end
        let none = LinkSeries::new(d);
        assert_eq!(
            none.dense(LinkField::Sojourn, end, f64::NAN, |_| 0.0).len(),
            40
        );
        assert!(none
            .dense(LinkField::Sojourn, end, f64::NAN, |_| 0.0)
            .iter()
            .all(|v| v.is_nan()));
    }
}
