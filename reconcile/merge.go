package reconcile

import (
	"context"
	"errors"
	"sort"
	"sync"
)

// mergeBuckets matches the rows of the differing buckets of two engines without holding them:
// each engine sends its rows ordered by the portable key hash, which means the same in both,
// and the two streams are merged on it. Only the rows of one key hash (one key, but for a rare
// collision) are held at a time, sorted so each key's rows reach the differ together. It
// returns the number of rows read.
func (p *plan) mergeBuckets(ctx context.Context, df *differ, leaves []bucket) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type item struct {
		kh  uint64
		row []any
	}
	var streams [2]chan item
	var errs [2]error
	var wg sync.WaitGroup
	for s, new := range []bool{false, true} {
		ch := make(chan item, 256)
		streams[s] = ch
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ch)
			errs[s] = p.eachBucketRow(ctx, new, leaves, func(kh uint64, row []any) error {
				select {
				case ch <- item{kh, append([]any(nil), row...)}:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		}()
	}
	// stop ends the streams early (the differ failed) and waits for both readers to finish.
	stop := func() {
		cancel()
		for _, ch := range streams {
			for range ch {
			}
		}
		wg.Wait()
	}

	var head [2]*item
	failed := false // a reader stopped on an error: its side is not exhausted, only cut short
	next := func(s int) {
		head[s] = nil
		if it, ok := <-streams[s]; ok {
			head[s] = &it
		} else if errs[s] != nil { // set before the channel closed
			failed = true
		}
	}
	next(0)
	next(1)
	type keyed struct {
		key string
		new bool
		row []any
	}
	var n int64
	var batch []keyed
	for (head[0] != nil || head[1] != nil) && !failed {
		kh := uint64(0)
		switch {
		case head[0] == nil:
			kh = head[1].kh
		case head[1] == nil:
			kh = head[0].kh
		default:
			kh = min(head[0].kh, head[1].kh)
		}
		batch = batch[:0]
		for s := range 2 {
			for !failed && head[s] != nil && head[s].kh == kh {
				batch = append(batch, keyed{df.groupKey(head[s].row), s == 1, head[s].row})
				next(s)
			}
		}
		n += int64(len(batch))
		sort.SliceStable(batch, func(i, j int) bool { return batch[i].key < batch[j].key })
		for _, k := range batch {
			df.add(k.new, k.row)
		}
		if df.err != nil {
			stop()
			return n, df.err
		}
	}
	if failed {
		stop()
		for _, err := range errs { // the reader's own error, not the other's cancellation
			if err != nil && !errors.Is(err, context.Canceled) {
				return n, err
			}
		}
		return n, errors.Join(errs[:]...)
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return n, err
	}
	df.flush()
	return n, nil
}

// sortByKey orders a partition's samples by key, as they come inside one engine: across two
// they are found in key-hash order, which says nothing to a reader.
func (s *Samples) sortByKey() {
	less := func(a, b Fields) bool {
		for i := range min(len(a), len(b)) {
			x, y := a[i].Value, b[i].Value
			if fx, ok := number(x); ok {
				if fy, ok := number(y); ok {
					if fx != fy {
						return fx < fy
					}
					continue
				}
			}
			if lessValue(x, y) {
				return true
			}
			if lessValue(y, x) {
				return false
			}
		}
		return false
	}
	sort.SliceStable(s.Added, func(i, j int) bool { return less(s.Added[i].Key, s.Added[j].Key) })
	sort.SliceStable(s.Removed, func(i, j int) bool { return less(s.Removed[i].Key, s.Removed[j].Key) })
	sort.SliceStable(s.Changed, func(i, j int) bool { return less(s.Changed[i].Key, s.Changed[j].Key) })
	sort.SliceStable(s.Duplicates, func(i, j int) bool { return less(s.Duplicates[i].Key, s.Duplicates[j].Key) })
}
