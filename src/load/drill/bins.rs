//! The one binning routine of the drills: fixed-width bins on a drill's clock (ns after its
//! origin, signed so a bin may start before it), and records sorted into them by whichever
//! instant the reading counts (intended start, end, a sample's time).

/// `count` bins of `width_ns`, the first starting at `start_ns`: bin i is
/// [start_ns + i x width_ns, start_ns + (i + 1) x width_ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bins {
    pub start_ns: i64,
    pub width_ns: u64,
    pub count: usize,
}

impl Bins {
    /// Bins from `start_ns` until `end_ns` is covered (the last one may reach past it); at least
    /// one, so a reading always has a row to put an instant in.
    pub fn spanning(start_ns: i64, end_ns: i64, width_ns: u64) -> Bins {
        let width = width_ns.max(1);
        let span = end_ns.saturating_sub(start_ns).max(0) as u64;
        Bins {
            start_ns,
            width_ns: width,
            count: span.div_ceil(width).max(1) as usize,
        }
    }

    /// The bins aligned to `origin_ns` (one starts there) that lie wholly inside the span from
    /// `from_ns` to `to_ns`, with the partial ones at either end left out (a bin starting exactly
    /// at `from_ns` is left out too: it starts before the first instant recorded after it).
    pub fn whole_around(origin_ns: i64, from_ns: i64, to_ns: i64, width_ns: u64) -> Bins {
        let width = width_ns.max(1) as i64;
        let first = (from_ns - origin_ns).div_euclid(width) + 1;
        let last = (to_ns - origin_ns).div_euclid(width) - 1;
        Bins {
            start_ns: origin_ns + first * width,
            width_ns: width as u64,
            count: (last - first + 1).max(0) as usize,
        }
    }

    /// The bin holding `t_ns`; None outside every bin.
    pub fn index(&self, t_ns: i64) -> Option<usize> {
        let i = (t_ns - self.start_ns).div_euclid(self.width_ns as i64);
        (0..self.count as i64).contains(&i).then_some(i as usize)
    }

    /// The bin holding `t_ns`, or the first or last bin when it lies before or after them all.
    pub fn index_clamped(&self, t_ns: i64) -> usize {
        let i = (t_ns - self.start_ns).div_euclid(self.width_ns as i64);
        i.clamp(0, self.count.saturating_sub(1) as i64) as usize
    }

    /// Where bin `i` starts, ns on the drill's clock.
    pub fn start_of(&self, i: usize) -> i64 {
        self.start_ns + i as i64 * self.width_ns as i64
    }

    /// `items` sorted into the bins by the instant `at` reads from each, in their order; an item
    /// outside every bin is left out.
    pub fn sort<'r, T>(
        &self,
        items: impl IntoIterator<Item = &'r T>,
        at: impl Fn(&T) -> i64,
    ) -> Vec<Vec<&'r T>> {
        let mut out: Vec<Vec<&T>> = (0..self.count).map(|_| Vec::new()).collect();
        for item in items {
            if let Some(i) = self.index(at(item)) {
                out[i].push(item);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    #[test]
    fn spanning_covers_the_end_and_keeps_one_bin_for_an_empty_span() {
        let b = Bins::spanning(0, 2050 * MS, 1000 * MS as u64);
        assert_eq!(b.count, 3);
        assert_eq!(b.index(2050 * MS), Some(2));
        assert_eq!(b.index(3000 * MS), None);
        assert_eq!(b.index_clamped(9000 * MS), 2);
        assert_eq!(b.index_clamped(-5), 0);
        assert_eq!(Bins::spanning(0, 0, 1000).count, 1);
        assert_eq!(
            Bins::spanning(0, 3000 * MS, 1000 * MS as u64).count,
            3,
            "exact: no extra bin"
        );
    }

    #[test]
    fn edges_belong_to_the_bin_they_open() {
        let b = Bins::spanning(-250 * MS, 750 * MS, 500 * MS as u64);
        assert_eq!(b.index(-250 * MS), Some(0));
        assert_eq!(b.index(250 * MS - 1), Some(0));
        assert_eq!(b.index(250 * MS), Some(1));
        assert_eq!(b.index(750 * MS), None, "the end is past the last bin");
        assert_eq!(b.index(-250 * MS - 1), None, "before the first bin");
        assert_eq!(b.start_of(1), 250 * MS);
    }

    #[test]
    fn whole_bins_around_an_origin_drop_the_partial_ones() {
        // Origin 1,005 ms into a run of 1,500 ms, 100 ms bins: -1,000 .. +400 from the origin.
        let b = Bins::whole_around(1005 * MS, 0, 1500 * MS, 100 * MS as u64);
        assert_eq!(b.count, 14);
        assert_eq!(b.start_ns - 1005 * MS, -1000 * MS);
        assert_eq!(b.start_of(13) - 1005 * MS, 300 * MS);
        assert_eq!(b.index(2 * MS), None, "2 ms in is in the partial first bin");
        assert_eq!(b.index(10 * MS), Some(0));
        // A span shorter than a bin holds none.
        assert_eq!(Bins::whole_around(0, 0, 50 * MS, 100 * MS as u64).count, 0);
    }

    #[test]
    fn sort_keeps_order_within_a_bin_and_drops_what_falls_outside() {
        let b = Bins::spanning(0, 300, 100);
        let items = [250i64, 10, 99, 100, -1, 300, 20];
        let sorted = b.sort(&items, |&t| t);
        let got: Vec<Vec<i64>> = sorted
            .iter()
            .map(|v| v.iter().map(|&&t| t).collect())
            .collect();
        assert_eq!(got, [vec![10, 99, 20], vec![100], vec![250]]);
    }
}
