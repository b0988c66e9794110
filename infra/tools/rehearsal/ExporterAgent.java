import java.io.File;
import java.lang.instrument.Instrumentation;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.prometheus.jmx.JmxCollector;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * The Prometheus JMX exporter of an image whose agent jar is not published on Maven Central
 * (tools/jmx-exporter/pom.xml), started as its agent starts: `-javaagent:<this jar>=[host:]port:config`.
 *
 * premain runs in the system class loader, beside Kafka's libraries; it only opens a class loader
 * of its own over this jar and the exporter's libraries (lib/ beside it), whose parent is the
 * platform loader, as the agent's shaded libraries never meet Kafka's (the config provider's
 * snakeyaml, say). `start` runs there: JVM metrics, the JmxCollector in AGENT mode on the
 * configuration file, the HTTP server (JavaAgent.start at the exporter's tag).
 */
public final class ExporterAgent {
    private ExporterAgent() {
    }

    public static void premain(String argument, Instrumentation instrumentation) throws Exception {
        File jar = new File(ExporterAgent.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        File[] libraries = new File(jar.getParentFile(), "lib").listFiles((dir, name) -> name.endsWith(".jar"));
        if (libraries == null || libraries.length == 0) {
            throw new IllegalStateException("no exporter libraries in " + new File(jar.getParentFile(), "lib"));
        }
        Arrays.sort(libraries);
        List<URL> urls = new ArrayList<>();
        urls.add(jar.toURI().toURL());
        for (File library : libraries) {
            urls.add(library.toURI().toURL());
        }
        ClassLoader own = new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
        Class.forName(ExporterAgent.class.getName(), true, own).getMethod("start", String.class).invoke(null, argument);
    }

    public static void start(String argument) throws Exception {
        // [host:]port:file, as the agent's Arguments.parse reads it (no IPv6 host here).
        String[] parts = argument.split(":");
        if (parts.length < 2 || parts.length > 3) {
            throw new IllegalArgumentException("expected [host:]port:config, got " + argument);
        }
        String file = parts[parts.length - 1];
        int port = Integer.parseInt(parts[parts.length - 2]);
        String host = parts.length == 3 ? parts[0] : "0.0.0.0";
        // The agent initialises the platform MBean server before the collector reads it.
        ManagementFactory.getPlatformMBeanServer();
        PrometheusRegistry registry = PrometheusRegistry.defaultRegistry;
        JvmMetrics.builder().register(registry);
        new JmxCollector(new File(file), JmxCollector.Mode.AGENT).register(registry);
        HTTPServer.builder().inetAddress(InetAddress.getByName(host)).port(port).registry(registry).buildAndStart();
    }
}
