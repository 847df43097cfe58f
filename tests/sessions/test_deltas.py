"""How often a stream's text goes out: as now for one stream, a few times a second for a hundred, and
never so rarely that a reply looks stuck."""

from sessions.deltas import DELTA_CHARS, DELTA_SECONDS, DELTAS_PER_SECOND, MAX_DELTA_SECONDS, DeltaBatcher, _Streams, delta_pace


def test_it_sends_a_lone_stream_as_often_as_ever():
    for streams in (0, 1, 5, 10):
        assert delta_pace(streams).seconds == DELTA_SECONDS and delta_pace(streams).chars == DELTA_CHARS


def test_it_updates_each_of_a_hundred_streams_a_few_times_a_second():
    assert 2 <= 1 / delta_pace(100).seconds <= 5


def test_the_interval_only_grows_with_the_streams_and_a_reply_still_moves_every_second():
    paces = [delta_pace(streams) for streams in range(0, 2001, 7)]
    assert all(a.seconds <= b.seconds and a.chars <= b.chars for a, b in zip(paces, paces[1:]))
    assert paces[-1].seconds == MAX_DELTA_SECONDS


def test_a_busy_process_keeps_to_its_delta_budget_until_each_stream_is_at_one_a_second():
    for streams in range(1, 2001):
        sent_a_second = streams / delta_pace(streams).seconds
        assert sent_a_second <= max(DELTAS_PER_SECOND, streams / MAX_DELTA_SECONDS) + 1e-9


def test_a_fast_stream_is_not_cut_back_into_small_pieces_when_the_interval_grows():
    pace = delta_pace(100)
    assert pace.chars >= 100 * pace.seconds * 10  # 1,000 characters a second fit in one interval's delta


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def stream(batcher: DeltaBatcher, clock: Clock, *, chunks: int, every: float) -> None:
    for n in range(chunks):
        clock.now += every
        batcher.push(f"{n} ")


def test_among_a_hundred_streams_a_reply_goes_out_in_fewer_deltas_but_starts_at_once_and_whole(frames):
    alone, busy = Clock(), Clock()
    streams = _Streams()
    with DeltaBatcher(1, 1, "mina", clock=alone, streams=streams) as batcher:
        stream(batcher, alone, chunks=50, every=0.2)  # a 1,000-character reply over 10 s
        batcher.finish()
    lone_deltas, frames[:] = list(frames), []

    streams.add(99)
    with DeltaBatcher(1, 2, "mina", clock=busy, streams=streams) as batcher:
        stream(batcher, busy, chunks=50, every=0.2)
        assert frames[0]["text"] == "0 "  # the first words were not held back
        batcher.finish()
    text = "".join(f"{n} " for n in range(50))
    assert "".join(f["text"] for f in lone_deltas) == "".join(f["text"] for f in frames) == text
    assert len(lone_deltas) == 50 and len(frames) <= 20
    assert streams.count == 99  # the finished stream no longer counts


def test_a_stream_that_fails_no_longer_counts(frames):
    streams = _Streams()
    try:
        with DeltaBatcher(1, 1, "mina", clock=Clock(), streams=streams):
            assert streams.count == 1
            raise RuntimeError("the connection broke")
    except RuntimeError:
        pass
    assert streams.count == 0
