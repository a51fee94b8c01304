"""The global key on macOS: Carbon's RegisterEventHotKey (ctypes into Carbon.framework), its
presses delivered to a handler on the application's event target, which Cocoa's loop runs."""

from __future__ import annotations

import ctypes
from typing import Any

from PySide6.QtCore import QObject

from roundhouse.api.shortcut import Shortcut
from roundhouse.gui.hotkey.backend import HotkeyBackend, taken_words
from roundhouse.gui.hotkey.keycodes import mac_key_code, mac_modifiers

CARBON = "/System/Library/Frameworks/Carbon.framework/Carbon"
NO_ERR = 0
EVENT_HOT_KEY_EXISTS_ERR = -9878
EVENT_NOT_HANDLED_ERR = -9874


def four_char_code(text: str) -> int:
    return int.from_bytes(text.encode("ascii"), "big")


SIGNATURE = four_char_code("RndH")
HOTKEY_ID = 1
K_EVENT_CLASS_KEYBOARD = four_char_code("keyb")
K_EVENT_HOT_KEY_PRESSED = 5
K_EVENT_PARAM_DIRECT_OBJECT = four_char_code("----")
TYPE_EVENT_HOT_KEY_ID = four_char_code("hkid")


class EventHotKeyID(ctypes.Structure):
    _fields_ = [("signature", ctypes.c_uint32), ("id", ctypes.c_uint32)]


class EventTypeSpec(ctypes.Structure):
    _fields_ = [("eventClass", ctypes.c_uint32), ("eventKind", ctypes.c_uint32)]


# OSStatus (*EventHandlerProcPtr)(EventHandlerCallRef, EventRef, void *userData)
EVENT_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def declare(carbon: Any) -> Any:
    """Carbon's calls used here, with their C signatures (OSStatus is SInt32)."""
    ref = ctypes.c_void_p
    signatures: dict[str, tuple[list[Any], Any]] = {
        "GetApplicationEventTarget": ([], ref),
        # (UInt32 keyCode, UInt32 modifiers, EventHotKeyID id, EventTargetRef, OptionBits,
        #  EventHotKeyRef *out)
        "RegisterEventHotKey": (
            [
                ctypes.c_uint32,
                ctypes.c_uint32,
                EventHotKeyID,
                ref,
                ctypes.c_uint32,
                ctypes.POINTER(ref),
            ],
            ctypes.c_int32,
        ),
        "UnregisterEventHotKey": ([ref], ctypes.c_int32),
        # (EventTargetRef, EventHandlerUPP, ItemCount, const EventTypeSpec *, void *userData,
        #  EventHandlerRef *out)
        "InstallEventHandler": (
            [
                ref,
                EVENT_HANDLER,
                ctypes.c_ulong,
                ctypes.POINTER(EventTypeSpec),
                ref,
                ctypes.POINTER(ref),
            ],
            ctypes.c_int32,
        ),
        "RemoveEventHandler": ([ref], ctypes.c_int32),
        # (EventRef, EventParamName, EventParamType, EventParamType *outActualType,
        #  ByteCount bufferSize, ByteCount *outActualSize, void *outData)
        "GetEventParameter": (
            [ref, ctypes.c_uint32, ctypes.c_uint32, ref, ctypes.c_ulong, ref, ref],
            ctypes.c_int32,
        ),
    }
    for name, (argtypes, restype) in signatures.items():
        function = getattr(carbon, name)
        function.argtypes = argtypes
        function.restype = restype
    return carbon


def load_carbon() -> Any:
    return declare(ctypes.CDLL(CARBON))


class MacHotkey(HotkeyBackend):
    """One hot key on the application's event target; its handler installed once."""

    name = "macOS"

    def __init__(self, carbon: Any | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._carbon = carbon
        self._hotkey_ref = ctypes.c_void_p()
        self._handler_ref = ctypes.c_void_p()
        # Kept alive as long as Carbon may call it.
        self._handler = EVENT_HANDLER(self._on_event)

    def register(self, shortcut: Shortcut) -> str | None:
        self.unregister()
        code = mac_key_code(shortcut.key)
        if code is None:
            return f"{shortcut} cannot be used: Mac keyboards have no {shortcut.key} key."
        if self._carbon is None:
            self._carbon = load_carbon()
        carbon = self._carbon
        target = carbon.GetApplicationEventTarget()
        if not self._handler_ref:
            spec = EventTypeSpec(K_EVENT_CLASS_KEYBOARD, K_EVENT_HOT_KEY_PRESSED)
            status = carbon.InstallEventHandler(
                target, self._handler, 1, ctypes.byref(spec), None, ctypes.byref(self._handler_ref)
            )
            if status != NO_ERR:
                return f"{shortcut} could not be registered: macOS refused the handler ({status})."
        status = carbon.RegisterEventHotKey(
            code,
            mac_modifiers(shortcut),
            EventHotKeyID(SIGNATURE, HOTKEY_ID),
            target,
            0,
            ctypes.byref(self._hotkey_ref),
        )
        if status == EVENT_HOT_KEY_EXISTS_ERR:
            return taken_words(shortcut, "macOS says another program registered it")
        if status != NO_ERR:
            return f"{shortcut} could not be registered: macOS refused it (error {status})."
        return None

    def unregister(self) -> None:
        if self._hotkey_ref and self._carbon is not None:
            self._carbon.UnregisterEventHotKey(self._hotkey_ref)
        self._hotkey_ref = ctypes.c_void_p()

    def _on_event(self, _call: int | None, event: int | None, _data: int | None) -> int:
        hotkey = EventHotKeyID()
        assert self._carbon is not None
        status = self._carbon.GetEventParameter(
            event,
            K_EVENT_PARAM_DIRECT_OBJECT,
            TYPE_EVENT_HOT_KEY_ID,
            None,
            ctypes.sizeof(hotkey),
            None,
            ctypes.byref(hotkey),
        )
        if status != NO_ERR or hotkey.signature != SIGNATURE or hotkey.id != HOTKEY_ID:
            return EVENT_NOT_HANDLED_ERR
        if self._hotkey_ref:
            self.activated.emit()
        return NO_ERR
