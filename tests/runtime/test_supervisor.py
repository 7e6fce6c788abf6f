from __future__ import annotations

import pytest
import trio
import trio.testing

from runtime import (
    Actor,
    BudgetExhausted,
    ConcurrencyLimitReached,
    DepthLimitReached,
    Ledger,
    SpawnRefused,
    Supervisor,
    SupervisorStatistics,
    open_supervisor,
)


async def idle(actor: Actor) -> None:
    await trio.sleep_forever()


async def drain(actor: Actor) -> None:
    async for _ in actor.mailbox:
        pass


async def test_addresses_follow_the_tree() -> None:
    """Roots are named by kind, children get parent/kind-n counting per parent and kind."""
    async with open_supervisor() as sup:
        main = await sup.spawn(idle, name="main")
        r1 = await sup.spawn(idle, name="researcher", parent=main)
        r2 = await sup.spawn(idle, name="researcher", parent=main)
        c1 = await sup.spawn(idle, name="coder", parent=main)
        g1 = await sup.spawn(idle, name="researcher", parent=r1)
        main2 = await sup.spawn(idle, name="main")
        assert [a.address for a in (main, r1, r2, c1, g1, main2)] == [
            "main",
            "main/researcher-1",
            "main/researcher-2",
            "main/coder-1",
            "main/researcher-1/researcher-1",
            "main-2",
        ]
        assert [a.depth for a in (main, r1, g1)] == [0, 1, 2]
        assert r1.parent is main and r1.name == "researcher"
        assert main.children == (r1, r2, c1)
        assert sup.actor("main/researcher-2") is r2
        assert sup.actors() == (main, r1, r2, c1, g1, main2)
        main.cancel()
        main2.cancel()


async def test_child_numbers_are_not_reused_after_a_child_ends() -> None:
    """n keeps counting per parent, so an ended child's address is never handed out again."""
    async with open_supervisor() as sup:
        main = await sup.spawn(idle, name="main")
        r1 = await sup.spawn(idle, name="researcher", parent=main)
        r1.cancel()
        await r1.wait_done()
        r2 = await sup.spawn(idle, name="researcher", parent=main)
        assert r2.address == "main/researcher-2"
        main.cancel()


async def test_explicit_address_must_be_unique_among_live_actors() -> None:
    """An explicit address is used as is, and refused while another live actor holds it."""
    async with open_supervisor() as sup:
        a = await sup.spawn(idle, name="main", address="session-1")
        assert a.address == "session-1"
        with pytest.raises(ValueError, match=r"^address 'session-1' is taken by a live actor$"):
            await sup.spawn(idle, name="main", address="session-1")
        a.cancel()
        await a.wait_done()
        b = await sup.spawn(idle, name="main", address="session-1")
        b.cancel()


async def test_unknown_address_raises_key_error() -> None:
    """actor() only finds live actors."""
    async with open_supervisor() as sup:
        a = await sup.spawn(idle, name="main")
        a.cancel()
        await a.wait_done()
        with pytest.raises(KeyError):
            sup.actor("main")


async def test_cancelling_a_parent_cancels_its_subtree(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """actor.cancel() ends the actor and all its descendants, quietly."""
    async with open_supervisor() as sup:
        main = await sup.spawn(idle, name="main")
        child = await sup.spawn(idle, name="researcher", parent=main)
        grandchild = await sup.spawn(idle, name="researcher", parent=child)
        sibling = await sup.spawn(idle, name="other")
        await trio.sleep(1)
        main.cancel(reason="user interrupt")
        await main.wait_done()
        assert child.done and grandchild.done and main.done
        assert not sibling.done
        assert main.cancel_scope.cancelled_caught
        sibling.cancel()


async def test_children_run_inside_the_parent_task() -> None:
    """A child's task is owned by a nursery of its parent's task, not by the supervisor."""
    tasks: dict[str, trio.lowlevel.Task] = {}

    async def record(actor: Actor) -> None:
        tasks[actor.address] = trio.lowlevel.current_task()
        await trio.sleep_forever()

    async with open_supervisor() as sup:
        main = await sup.spawn(record, name="main")
        child = await sup.spawn(record, name="researcher", parent=main)
        await trio.testing.wait_all_tasks_blocked()  # spawn returns before the task has run
        nursery = tasks[child.address].parent_nursery
        assert nursery is not None
        assert nursery.parent_task is tasks["main"]
        main.cancel()


async def test_an_actor_waits_for_its_children_after_its_behaviour_returns(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A parent whose behaviour has returned stays live until its children end."""
    async with open_supervisor() as sup:

        async def parent(actor: Actor) -> None:
            await sup.spawn(sleepy, name="child", parent=actor)

        async def sleepy(actor: Actor) -> None:
            await trio.sleep(5)

        main = await sup.spawn(parent, name="main")
        await main.wait_done()
        assert trio.current_time() == 5


async def test_mailbox_is_closed_when_the_actor_ends() -> None:
    """Messages sent to an ended actor are refused rather than lost silently."""
    async with open_supervisor() as sup:
        main = await sup.spawn(drain, name="main")
        await main.mailbox.send("hello")
        main.mailbox.close()
        await main.wait_done()
        with pytest.raises(trio.ClosedResourceError):
            await main.mailbox.send("late")


async def test_cancel_mid_sleep_ends_quietly(autojump_clock: trio.testing.MockClock) -> None:
    """Cancelling an actor is not an error: it ends at that instant and nothing propagates."""
    ended: list[float] = []

    async def sleeper(actor: Actor) -> None:
        try:
            await trio.sleep(100)
        finally:
            ended.append(trio.current_time())

    async with open_supervisor() as sup:
        actor = await sup.spawn(sleeper, name="main")
        await trio.sleep(5)
        actor.cancel()
        await actor.wait_done()
    assert ended == [5]
    assert trio.current_time() == 5


async def test_depth_limit_refuses_with_the_exact_message() -> None:
    """With max_depth=1 a grandchild is refused: "Maximum agent depth reached (1)"."""
    async with open_supervisor(max_depth=1) as sup:
        main = await sup.spawn(idle, name="main")
        child = await sup.spawn(idle, name="researcher", parent=main)
        with pytest.raises(DepthLimitReached, match=r"^Maximum agent depth reached \(1\)$") as e:
            await sup.spawn(idle, name="researcher", parent=child)
        assert e.value.reason == "Maximum agent depth reached (1)"
        assert sup.statistics().spawned_total == 2
        main.cancel()


async def test_concurrency_limit_counts_live_subagents_only() -> None:
    """max_concurrent bounds live depth>=1 actors; roots don't count and slots free up."""
    async with open_supervisor(max_concurrent=2) as sup:
        main = await sup.spawn(idle, name="main")
        await sup.spawn(idle, name="root")
        a = await sup.spawn(idle, name="worker", parent=main)
        await sup.spawn(idle, name="worker", parent=main)
        with pytest.raises(ConcurrencyLimitReached, match=r"^Concurrent subagent limit reached$"):
            await sup.spawn(idle, name="worker", parent=main)
        a.cancel()
        await a.wait_done()
        await sup.spawn(idle, name="worker", parent=main)
        for actor in sup.actors():
            actor.cancel()


async def test_refusals_are_checked_budget_then_depth_then_concurrency() -> None:
    """When several limits apply, the budget refusal wins, then depth."""
    ledger = Ledger(cap=1.0)
    async with open_supervisor(ledger=ledger, max_depth=1, max_concurrent=1) as sup:
        main = await sup.spawn(idle, name="main")
        child = await sup.spawn(idle, name="worker", parent=main)
        with pytest.raises(DepthLimitReached):
            await sup.spawn(idle, name="worker", parent=child)
        ledger.charge("main", 1.0)
        with pytest.raises(BudgetExhausted, match=r"^Budget limit reached$"):
            await sup.spawn(idle, name="worker", parent=child)
        with pytest.raises(SpawnRefused):
            await sup.spawn(idle, name="other")
        main.cancel()


async def test_cancel_background_cancels_only_background_actors() -> None:
    """cancel_background() stops background actors (and their subtrees) and counts them."""
    async with open_supervisor() as sup:
        main = await sup.spawn(idle, name="main")
        bg1 = await sup.spawn(idle, name="bg", parent=main, background=True)
        bg2 = await sup.spawn(idle, name="bg", parent=main, background=True)
        under_bg = await sup.spawn(idle, name="fg", parent=bg1)
        fg = await sup.spawn(idle, name="fg", parent=main)
        assert sup.cancel_background("stop") == 2
        await bg1.wait_done()
        await bg2.wait_done()
        assert under_bg.done
        assert not fg.done and not main.done
        assert sup.cancel_background() == 0
        main.cancel()


async def test_budget_trip_cancels_background_actors_in_the_same_instant(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The charge that trips the ledger cancels every background actor before it returns."""
    ledger = Ledger(cap=1.0)
    ended: dict[str, float] = {}

    async def worker(actor: Actor) -> None:
        try:
            await trio.sleep_forever()
        finally:
            ended[actor.address] = trio.current_time()

    async with open_supervisor(ledger=ledger) as sup:

        async def main_loop(actor: Actor) -> None:
            bg = await sup.spawn(worker, name="bg", parent=actor, background=True)
            fg = await sup.spawn(worker, name="fg", parent=actor)
            await trio.sleep(3)
            assert ledger.charge(actor.address, 1.5) is True
            assert bg.cancel_scope.cancel_called
            assert not fg.cancel_scope.cancel_called
            await bg.wait_done()
            fg.cancel()

        main = await sup.spawn(main_loop, name="main")
        await main.wait_done()
    assert ended == {"main/bg-1": 3, "main/fg-1": 3}


async def test_statistics_return_to_zero_live_actors() -> None:
    """Live counts rise with the tree and fall back to zero; totals and peaks remain."""
    async with open_supervisor() as sup:
        main = await sup.spawn(drain, name="main", mailbox_capacity=4)
        child = await sup.spawn(idle, name="researcher", parent=main)
        await sup.spawn(idle, name="researcher", parent=child)
        for i in range(3):
            main.mailbox.send_nowait(i)
        assert sup.statistics() == SupervisorStatistics(
            live_actors=3,
            live_tasks=3,
            max_depth_live=2,
            spawned_total=3,
            peak_live=3,
            mailbox_peak=3,
        )
        child.cancel()
        main.mailbox.close()
    assert sup.statistics() == SupervisorStatistics(
        live_actors=0,
        live_tasks=0,
        max_depth_live=0,
        spawned_total=3,
        peak_live=3,
        mailbox_peak=3,
    )
    assert sup.actors() == ()


async def test_an_error_propagates_through_the_tree() -> None:
    """An exception in a grandchild cancels the tree and surfaces once, in one group."""
    cancelled: list[str] = []

    async def failing(actor: Actor) -> None:
        raise ValueError("boom")

    async def watcher(actor: Actor) -> None:
        try:
            await trio.sleep_forever()
        finally:
            cancelled.append(actor.address)

    with pytest.RaisesGroup(pytest.RaisesExc(ValueError, match=r"^boom$")):
        async with open_supervisor() as sup:
            main = await sup.spawn(watcher, name="main")
            await sup.spawn(watcher, name="other")
            child = await sup.spawn(watcher, name="child", parent=main)
            await sup.spawn(failing, name="leaf", parent=child)
    assert sorted(cancelled) == ["main", "main/child-1", "other"]
    assert sup.statistics().live_actors == 0


async def test_body_error_cancels_every_actor() -> None:
    """An error in the open_supervisor body cancels the actors instead of waiting for them."""
    with pytest.RaisesGroup(RuntimeError):
        async with open_supervisor() as sup:
            main = await sup.spawn(idle, name="main")
            raise RuntimeError("body failed")
    assert main.done


async def test_spawn_needs_an_open_supervisor_and_a_live_parent() -> None:
    """Spawning after exit, or under an ended parent, is misuse."""
    async with open_supervisor() as sup:
        main = await sup.spawn(idle, name="main")
        main.cancel()
        await main.wait_done()
        with pytest.raises(ValueError, match=r"^parent actor 'main' is not live in this"):
            await sup.spawn(idle, name="child", parent=main)
    with pytest.raises(RuntimeError, match=r"^supervisor is closed"):
        await sup.spawn(idle, name="main")
    assert isinstance(sup, Supervisor)


async def test_limits_are_validated() -> None:
    """Negative limits are rejected with the parameter name."""
    with pytest.raises(ValueError, match=r"^max_depth must be >= 0, got -1$"):
        async with open_supervisor(max_depth=-1):
            pass


async def test_a_leaf_actor_runs_without_a_nursery_and_takes_no_children() -> None:
    """leaf=True: the behaviour runs in the actor's scope alone; spawning under it is refused,
    cancelling it still ends it quietly."""
    seen: list[trio.Nursery | None] = []

    async def leafy(actor: Actor) -> None:
        seen.append(actor._nursery)
        await trio.sleep_forever()

    async with open_supervisor() as sup:
        main = await sup.spawn(idle, name="main")
        leaf = await sup.spawn(leafy, name="leaf", parent=main, leaf=True)
        await trio.testing.wait_all_tasks_blocked()
        assert seen == [None] and leaf.leaf and not main.leaf
        with pytest.raises(ValueError, match="is a leaf: it takes no children"):
            await sup.spawn(idle, name="child", parent=leaf)
        leaf.cancel()
        await leaf.wait_done()
        assert sup.statistics().live_actors == 1
        main.cancel()
    assert sup.statistics().live_tasks == 0


async def test_a_leaf_actors_error_reaches_the_supervisor_unwrapped_once() -> None:
    async def boom(actor: Actor) -> None:
        raise KeyError("boom")

    with pytest.raises(ExceptionGroup) as info:
        async with open_supervisor() as sup:
            main = await sup.spawn(idle, name="main")
            await sup.spawn(boom, name="leaf", parent=main, leaf=True)
    assert [type(e) for e in info.value.exceptions] == [KeyError]


async def test_a_root_actor_can_run_in_the_callers_task() -> None:
    """root() registers the actor (live, addressable, its mailbox open) before it runs; run()
    runs it right here and returns once it and its children are done."""
    tasks: list[trio.lowlevel.Task] = []

    async def main_behaviour(actor: Actor) -> None:
        tasks.append(trio.lowlevel.current_task())
        await sup.spawn(drain, name="child", parent=actor)
        async for item in actor.mailbox:
            if item == "stop":
                break
        for child in actor.children:
            child.mailbox.close()

    async with open_supervisor() as sup:
        main = sup.root("main", address="main")
        assert sup.actor("main") is main and sup.statistics().live_actors == 1
        main.mailbox.send_nowait("stop")
        await sup.run(main, main_behaviour)
        assert tasks == [trio.lowlevel.current_task()]
        assert main.done and sup.statistics().live_actors == 0
        with pytest.raises(ValueError, match="not a registered root"):
            await sup.run(main, main_behaviour)
    assert sup.statistics().live_tasks == 0


async def test_cancelling_a_root_run_in_the_callers_task_ends_it_quietly() -> None:
    async with open_supervisor() as sup:
        main = sup.root("main")
        main.cancel()
        await sup.run(main, idle)  # returns: cancellation of an actor is not an error
        assert main.done


async def test_a_child_spawned_before_its_parents_task_runs_waits_for_it() -> None:
    """An actor is live before its task runs; a child spawned under it at that moment waits
    for the parent's nursery instead of failing, and starts once the parent runs."""
    spawned: list[Actor] = []

    async def parent(actor: Actor) -> None:
        while not spawned:
            await trio.lowlevel.checkpoint()
        assert spawned[0].parent is actor and spawned[0].address == "main/worker-1"
        actor.cancel()

    async with open_supervisor() as sup:
        main = sup.root("main")

        async def spawn_under_main() -> None:
            spawned.append(await sup.spawn(idle, name="worker", parent=main))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(spawn_under_main)
            await trio.testing.wait_all_tasks_blocked()
            assert spawned == []  # waiting: main has no nursery yet
            await sup.run(main, parent)
        assert len(spawned) == 1 and spawned[0].done


async def test_a_root_that_never_runs_is_forgotten_when_the_supervisor_closes() -> None:
    """If its owner fails between root() and run(), the actor does not stay live (and a child
    waiting for its nursery is released with an error, not left hanging)."""
    errors: list[BaseException] = []

    async def spawn_under(parent: Actor) -> None:
        try:
            await sup.spawn(idle, name="child", parent=parent)
        except ValueError as exc:
            errors.append(exc)

    async with trio.open_nursery() as outside:
        with pytest.raises(ExceptionGroup):
            async with open_supervisor() as sup:
                main = sup.root("main")
                outside.start_soon(spawn_under, main)
                await trio.testing.wait_all_tasks_blocked()
                raise RuntimeError("the owner failed before run()")
    assert main.done and sup.statistics().live_actors == 0
    assert len(errors) == 1 and "ended before it could take children" in str(errors[0])


async def test_wait_done_on_an_ended_actor_returns_at_once_with_a_checkpoint() -> None:
    """Waiting for an actor that already ended returns (the end is remembered without an
    Event made up front), and is still a checkpoint: a cancelled waiter is cancelled."""
    async with open_supervisor() as supervisor:

        async def quick(actor: Actor) -> None:
            pass

        actor = await supervisor.spawn(quick, name="quick")
        await actor.wait_done()
        assert actor.done
        await actor.wait_done()
        with trio.CancelScope() as scope:
            scope.cancel()
            await actor.wait_done()
        assert scope.cancelled_caught


async def test_a_spawn_in_a_cancelled_scope_returns_its_live_actor_and_runs_it() -> None:
    """Once spawned, the caller gets its actor back even in a cancelled scope (a spawn is never
    cut by a cancellation), and the actor's task runs from the caller's next schedule point."""
    ran: list[str] = []

    async def behaviour(actor: Actor) -> None:
        ran.append(actor.address)

    async with open_supervisor() as supervisor:
        with trio.CancelScope() as scope:
            scope.cancel()
            actor = await supervisor.spawn(behaviour, name="a")
            assert supervisor.actor("a") is actor and ran == []
        await actor.wait_done()
    assert ran == ["a"]


async def test_spawn_nowait_spawns_as_spawn_does_or_does_nothing_until_the_parent_runs() -> None:
    """``spawn_nowait`` gives the same addresses, limits and refusals as ``spawn`` without a
    checkpoint; while the parent's task has not started it returns None and counts nothing
    (``spawn`` then waits for the parent)."""
    ledger = Ledger(cap=1.0)
    async with open_supervisor(ledger=ledger, max_depth=1, max_concurrent=2) as sup:
        main = sup.root("main")
        before = sup.statistics()
        assert sup.spawn_nowait(idle, name="worker", parent=main) is None
        assert sup.statistics() == before and main.children == ()

        async def parent(actor: Actor) -> None:
            with trio.testing.assert_no_checkpoints():
                first = sup.spawn_nowait(idle, name="worker", parent=actor)
                second = sup.spawn_nowait(idle, name="worker", parent=actor, background=True)
            assert first is not None and second is not None
            assert [first.address, second.address] == ["main/worker-1", "main/worker-2"]
            assert second.background and actor.children == (first, second)
            with pytest.raises(ConcurrencyLimitReached):
                sup.spawn_nowait(idle, name="worker", parent=actor)
            with pytest.raises(DepthLimitReached):
                sup.spawn_nowait(idle, name="worker", parent=first)
            ledger.charge("main", 1.0)
            with pytest.raises(BudgetExhausted):
                sup.spawn_nowait(idle, name="worker", parent=first)
            assert sup.statistics().live_actors == 3
            actor.cancel()

        await sup.run(main, parent)
