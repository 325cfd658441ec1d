// window.extensionsAPI as Argo CD's UI defines it (ui/src/app/shared/services/extensions-service.ts
// of v3.6.1): the same five registration functions with the same arguments, the same registries,
// the same lookups (resource tabs matched by minimatch on group and kind, sorted by title), the
// legacy window.extensions.resources registry, and the same events. Written here from that file's
// behaviour; nothing of Argo CD's UI is bundled.
import minimatch from 'minimatch';

class ExtensionsEventTarget {
    constructor() {
        this.listeners = new Map();
    }
    addEventListener(name, listener) {
        if (!this.listeners.has(name)) {
            this.listeners.set(name, []);
        }
        this.listeners.get(name).push(listener);
    }
    removeEventListener(name, listener) {
        const list = this.listeners.get(name);
        if (list) {
            this.listeners.set(name, list.filter(l => l !== listener));
        }
    }
    emit(name, ext) {
        (this.listeners.get(name) || []).forEach(l => l(ext));
    }
}

const registry = {
    eventTarget: new ExtensionsEventTarget(),
    resourceExtentions: [],
    systemLevelExtensions: [],
    appViewExtensions: [],
    statusPanelExtensions: [],
    topBarActionMenuExts: []
};

function registerResourceExtension(component, group, kind, tabTitle, opts) {
    const ext = {component, group, kind, title: tabTitle, icon: opts && opts.icon};
    registry.resourceExtentions.push(ext);
    registry.eventTarget.emit('resource', ext);
}

function registerSystemLevelExtension(component, title, path, icon) {
    const ext = {component, title, icon, path};
    registry.systemLevelExtensions.push(ext);
    registry.eventTarget.emit('systemLevel', ext);
}

function registerAppViewExtension(component, title, icon, shouldDisplay) {
    const ext = {component, title, icon, shouldDisplay: shouldDisplay || (() => true)};
    registry.appViewExtensions.push(ext);
    registry.eventTarget.emit('appView', ext);
}

function registerStatusPanelExtension(component, title, id, flyout) {
    const ext = {component, flyout, title, id};
    registry.statusPanelExtensions.push(ext);
    registry.eventTarget.emit('statusPanel', ext);
}

function registerTopBarActionMenuExt(component, title, id, flyout, shouldDisplay = () => true, iconClassName, isMiddle = false) {
    const ext = {component, flyout, shouldDisplay, title, id, iconClassName, isMiddle};
    registry.topBarActionMenuExts.push(ext);
    registry.eventTarget.emit('topBar', ext);
}

let legacyInitialized = false;

function initLegacyExtensions() {
    if (legacyInitialized) {
        return;
    }
    legacyInitialized = true;
    const resources = window.extensions.resources;
    Object.keys(resources).forEach(key => {
        const [group, kind] = key.split('/');
        registerResourceExtension(resources[key].component, group, kind, 'More');
    });
}

/** What the UI asks the registries (ExtensionsService). */
export const extensionsService = {
    addEventListener: (type, cb) => registry.eventTarget.addEventListener(type, cb),
    removeEventListener: (type, cb) => registry.eventTarget.removeEventListener(type, cb),
    getResourceTabs(group, kind) {
        initLegacyExtensions();
        const items = registry.resourceExtentions.filter(ext => minimatch(group, ext.group) && minimatch(kind, ext.kind)).slice();
        return items.sort((a, b) => a.title.localeCompare(b.title));
    },
    getSystemExtensions: () => registry.systemLevelExtensions.slice(),
    getAppViewExtensions: () => registry.appViewExtensions.slice(),
    getStatusPanelExtensions: () => registry.statusPanelExtensions.slice(),
    getActionMenuExtensions: () => registry.topBarActionMenuExts.slice()
};

/** Installs the globals, as the UI's module does when it loads. */
export function install(window) {
    // deprecated: kept for backwards compatibility, as in the UI
    window.extensions = {resources: {}};
    window.extensionsAPI = {
        registerResourceExtension,
        registerSystemLevelExtension,
        registerAppViewExtension,
        registerStatusPanelExtension,
        registerTopBarActionMenuExt
    };
}
