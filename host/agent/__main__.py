"""``python -m host.agent serve ...``: the NIC emulator's sender with its TCCL agent
(:func:`host.agent.launch.send_argv` turns the options into ``python -m host.nic send``'s;
see :mod:`host.agent.launch`)."""
import sys

from host.agent.launch import send_argv
from host.nic.cli import main as nic_main

sys.exit(nic_main(send_argv()))
