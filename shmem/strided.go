package shmem

import "fmt"

// checkStrided validates a strided transfer of n elements: every index
// first + k·stride (k < n) inside [0, length).
func checkStrided(name, what string, first, stride, n, length int) error {
	if n < 0 {
		return fmt.Errorf("shmem: %s: negative count %d", name, n)
	}
	if stride < 1 {
		return fmt.Errorf("shmem: %s: %s stride %d must be at least 1", name, what, stride)
	}
	if n == 0 {
		return nil
	}
	if first < 0 || first >= length || (n-1) > (length-1-first)/stride {
		return fmt.Errorf("shmem: %s: %d %s elements from %d with stride %d leave [0,%d)", name, n, what, first, stride, length)
	}
	return nil
}

// IPut is the strided put (shmem_iput): element k < n of the result is
// src[k·srcStride], written to PE pe's element dst + k·dstStride. It
// completes like Put.
func IPut[T Elem](c *Coarray[T], pe, dst, dstStride int, src []T, srcStride, n int) error {
	if err := checkStrided("IPut", "target", dst, dstStride, n, c.Len()); err != nil {
		return err
	}
	if err := checkStrided("IPut", "source", 0, srcStride, n, len(src)); err != nil {
		return err
	}
	if dstStride == 1 && srcStride == 1 {
		return c.Put(pe, dst, src[:n])
	}
	for k := 0; k < n; k++ {
		if err := c.Put(pe, dst+k*dstStride, src[k*srcStride:k*srcStride+1]); err != nil {
			return err
		}
	}
	return nil
}

// IGet is the strided get (shmem_iget): dst[k·dstStride] receives PE pe's
// element src + k·srcStride for k < n. It returns when dst holds the data
// (the elements travel as non-blocking gets completed by one Quiet).
func IGet[T Elem](c *Coarray[T], pe, src, srcStride int, dst []T, dstStride, n int) error {
	if err := checkStrided("IGet", "source", src, srcStride, n, c.Len()); err != nil {
		return err
	}
	if err := checkStrided("IGet", "target", 0, dstStride, n, len(dst)); err != nil {
		return err
	}
	if dstStride == 1 && srcStride == 1 {
		return c.Get(pe, src, dst[:n])
	}
	for k := 0; k < n; k++ {
		if err := c.GetNBI(pe, src+k*srcStride, dst[k*dstStride:k*dstStride+1]); err != nil {
			return err
		}
	}
	return c.s.w.Quiet()
}
