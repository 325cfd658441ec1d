// The host page with React 16.14.0, as Argo CD v2.14.11's and v3.0.23's UIs pin it (ui/yarn.lock);
// build.mjs resolves react and react-dom to the react16 and react-dom16 packages for it.
import * as ReactDOM from 'react-dom';
import {start} from './host.js';

start(container => element => ReactDOM.render(element, container));
