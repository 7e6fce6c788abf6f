"""The actor kernel: actors and mailboxes, the supervisor tree, the budget ledger and the
read/write tool scheduler. Knows nothing about models or prompts; ``agents`` builds on it.
"""

from __future__ import annotations

from ._actor import Actor as Actor
from ._budget_ledger import BudgetLedger as BudgetLedger
from ._errors import BudgetExhausted as BudgetExhausted
from ._errors import ConcurrencyLimitReached as ConcurrencyLimitReached
from ._errors import DepthLimitReached as DepthLimitReached
from ._errors import RuntimeKernelError as RuntimeKernelError
from ._errors import SpawnRefused as SpawnRefused
from ._ledger import ForeignReservation as ForeignReservation
from ._ledger import Ledger as Ledger
from ._ledger import LedgerStatistics as LedgerStatistics
from ._ledger import Reservation as Reservation
from ._ledger import Settlement as Settlement
from ._ledger import affordable_output_tokens as affordable_output_tokens
from ._mailbox import Mailbox as Mailbox
from ._mailbox import MailboxStatistics as MailboxStatistics
from ._scheduler import SchedulerStatistics as SchedulerStatistics
from ._scheduler import ToolScheduler as ToolScheduler
from ._scheduler import partition as partition
from ._supervisor import Supervisor as Supervisor
from ._supervisor import SupervisorStatistics as SupervisorStatistics
from ._supervisor import open_supervisor as open_supervisor

__all__ = [
    "Actor",
    "BudgetExhausted",
    "BudgetLedger",
    "ConcurrencyLimitReached",
    "DepthLimitReached",
    "ForeignReservation",
    "Ledger",
    "LedgerStatistics",
    "Mailbox",
    "MailboxStatistics",
    "Reservation",
    "RuntimeKernelError",
    "SchedulerStatistics",
    "Settlement",
    "SpawnRefused",
    "Supervisor",
    "SupervisorStatistics",
    "ToolScheduler",
    "affordable_output_tokens",
    "open_supervisor",
    "partition",
]
