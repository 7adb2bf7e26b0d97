"""Readers, as Fluid's scripts feed from them (paddle.reader): a reader is a function of no
arguments returning an iterable of samples; these decorators make readers from readers.

    train = rill.batch(rill.reader.shuffle(my_samples, buf_size=500), batch_size=20)
    for batch in train(): exe.run(feed=feeder.feed(batch), ...)

Each decorator returns a new reader and leaves its input alone; each call of the result
reads its inputs afresh. xmap_readers uses threads (the mapping runs in this process).
"""
import itertools
import queue
import random
import threading

__all__ = ["map_readers", "buffered", "compose", "chain", "shuffle", "firstn", "xmap_readers", "cache",
           "ComposeNotAligned", "batch"]


class ComposeNotAligned(ValueError):
    """compose(check_alignment=True) was given readers of different lengths."""


def map_readers(func, *readers):
    """Samples func(a, b, ...) of the readers' samples taken in step (to the shortest)."""
    def reader():
        for samples in zip(*[r() for r in readers]):
            yield func(*samples)
    return reader


def shuffle(reader, buf_size):
    """The samples shuffled within consecutive windows of buf_size."""
    if buf_size < 1:
        raise ValueError("shuffle: buf_size must be at least 1, got %r" % (buf_size,))

    def shuffled():
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) >= buf_size:
                random.shuffle(buf)
                yield from buf
                buf = []
        random.shuffle(buf)
        yield from buf
    return shuffled


def chain(*readers):
    """The samples of each reader in turn."""
    def reader():
        return itertools.chain(*[r() for r in readers])
    return reader


def compose(*readers, **kwargs):
    """Tuples joining the readers' samples taken in step (a tuple sample is spread out:
    (a, (b, c)) gives (a, b, c)). With check_alignment (the default) readers of different
    lengths raise ComposeNotAligned; without it the shortest ends the reader."""
    check_alignment = kwargs.pop("check_alignment", True)
    if kwargs:
        raise TypeError("compose: unexpected arguments %s" % sorted(kwargs))

    def flat(sample):
        return sample if isinstance(sample, tuple) else (sample,)

    def reader():
        its = [r() for r in readers]
        if not check_alignment:
            for samples in zip(*its):
                yield sum((flat(s) for s in samples), ())
            return
        for samples in itertools.zip_longest(*its, fillvalue=_END):
            if any(s is _END for s in samples):
                raise ComposeNotAligned("compose: the readers have different lengths")
            yield sum((flat(s) for s in samples), ())
    return reader


_END = object()


def buffered(reader, size):
    """The same samples, read ahead into a buffer of `size` by a thread of their own."""
    def buffered_reader():
        q = queue.Queue(maxsize=size)
        error = []

        def fill():
            try:
                for sample in reader():
                    q.put(sample)
            except BaseException as e:  # handed to the consumer, raised there
                error.append(e)
            q.put(_END)
        t = threading.Thread(target=fill, daemon=True)
        t.start()
        while True:
            sample = q.get()
            if sample is _END:
                break
            yield sample
        t.join()
        if error:
            raise error[0]
    return buffered_reader


def firstn(reader, n):
    """The first n samples."""
    def reader_n():
        return itertools.islice(reader(), n)
    return reader_n


def cache(reader):
    """The samples read once, on the first call, and kept in memory."""
    samples = []
    filled = []

    def cached():
        if not filled:
            samples.extend(reader())
            filled.append(True)
        return iter(samples)
    return cached


def xmap_readers(mapper, reader, process_num, buffer_size, order=False):
    """mapper(sample) for each sample, computed by process_num threads; in the reader's
    order with order=True, else as they finish. An exception in mapper is raised to the
    consumer."""
    def xreader():
        inputs, outputs = queue.Queue(buffer_size), queue.Queue(buffer_size)
        errors = []

        def feed():
            for i, sample in enumerate(reader()):
                inputs.put((i, sample))
            for _ in range(process_num):
                inputs.put(_END)

        def work():
            while True:
                item = inputs.get()
                if item is _END:
                    break
                try:
                    outputs.put((item[0], mapper(item[1])))
                except BaseException as e:
                    errors.append(e)
                    outputs.put((item[0], _END))
            outputs.put(_END)

        threads = [threading.Thread(target=feed, daemon=True)] + \
                  [threading.Thread(target=work, daemon=True) for _ in range(process_num)]
        for t in threads:
            t.start()
        pending, next_index, finished = {}, 0, 0
        while finished < process_num:
            item = outputs.get()
            if item is _END:
                finished += 1
                continue
            if errors:
                raise errors[0]
            if not order:
                yield item[1]
                continue
            pending[item[0]] = item[1]
            while next_index in pending:
                yield pending.pop(next_index)
                next_index += 1
        if errors:
            raise errors[0]
    return xreader


def batch(reader, batch_size, drop_last=False):
    """Lists of batch_size samples (the last one shorter, unless drop_last)."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError("batch_size should be a positive integer value, but got batch_size=%r" % (batch_size,))

    def batch_reader():
        b = []
        for sample in reader():
            b.append(sample)
            if len(b) == batch_size:
                yield b
                b = []
        if b and not drop_last:
            yield b
    return batch_reader
