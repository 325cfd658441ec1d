// The host page with React 19.2.6, as Argo CD v3.6.1's UI pins it (ui/pnpm-lock.yaml).
import {createRoot} from 'react-dom/client';
import {start} from './host.js';

start(container => {
    const root = createRoot(container);
    return element => root.render(element);
});
