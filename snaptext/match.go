package snaptext

// Matching two lists of children: the longest common subsequence of
// their keys (Myers' O(ND) algorithm), where a node with a ref is keyed
// by its ref and one without by its line. Children that differ by more
// than maxEdits are not matched in their middle: the delta replaces it
// whole, which is still exact, only longer.

// maxEdits bounds the work on one list of children: D (the edits) times
// the list's length, and a trace of D² numbers.
const maxEdits = 1000

// common returns the pairs (i, j) of a longest common subsequence of a
// and b, in order.
func common(a, b []int) [][2]int {
	// Equal ends first: the usual case (a few changes in a long list)
	// leaves Myers a short middle.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var pairs [][2]int
	for i := range pre {
		pairs = append(pairs, [2]int{i, i})
	}
	for _, p := range myers(a[pre:len(a)-suf], b[pre:len(b)-suf]) {
		pairs = append(pairs, [2]int{p[0] + pre, p[1] + pre})
	}
	for k := suf; k > 0; k-- {
		pairs = append(pairs, [2]int{len(a) - k, len(b) - k})
	}
	return pairs
}

// myers is the matched pairs of a shortest edit script from a to b, or
// none when it takes more than maxEdits edits.
func myers(a, b []int) [][2]int {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return nil
	}
	limit := min(n+m, maxEdits)
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int
	for d := 0; d <= limit; d++ {
		// What round d reads: diagonals -d-1 to d+1 of the round before.
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b, d)
			}
		}
	}
	return nil
}

// backtrack walks the trace of Myers' search back from its end, the
// diagonals it crossed being the matched pairs.
func backtrack(trace [][]int, a, b []int, d int) [][2]int {
	x, y := len(a), len(b)
	var pairs [][2]int
	for ; d > 0; d-- {
		band := trace[d]
		at := func(k int) int { return band[k+d+1] }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			pairs = append(pairs, [2]int{x, y})
		}
		x, y = prevX, prevY
	}
	for x > 0 && y > 0 {
		x--
		y--
		pairs = append(pairs, [2]int{x, y})
	}
	for i, j := 0, len(pairs)-1; i < j; i, j = i+1, j-1 {
		pairs[i], pairs[j] = pairs[j], pairs[i]
	}
	return pairs
}
