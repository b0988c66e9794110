// The JDK's verdict on Kafka client configurations, for the runtime conformance tier
// (tests/conformance/test_connect_worker.py). Each case is a java.util.Properties file: the client configuration a
// Connect worker would hand to KafkaProducer/KafkaConsumer/Admin, plus `expect.*` keys naming
// the cluster it must reach. The JDK does the parsing that Kafka delegates to it: KeyStore.load
// for store files, CertificateFactory and KeyFactory(PKCS8EncodedKeySpec) for PEM material, and
// the JDK's JAAS configuration parser for `sasl.jaas.config`. The order of Kafka's own checks is
// that of DefaultSslEngineFactory.createTruststore/createKeystore (Apache Kafka 3.8.0,
// clients/src/main/java/org/apache/kafka/common/security/ssl/DefaultSslEngineFactory.java).
//
// Usage: java tests/support/java/ClientCheck.java DIR   -> one line per case: "OK name" or "FAIL name: why"

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.security.*;
import java.security.cert.*;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.*;
import java.util.regex.*;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.Configuration;

public class ClientCheck {
    static class Fail extends Exception { Fail(String m) { super(m); } }

    public static void main(String[] args) throws Exception {
        File[] cases = new File(args[0]).listFiles((d, n) -> n.endsWith(".properties"));
        Arrays.sort(cases);
        for (File f : cases) {
            Properties p = new Properties();
            try (Reader r = new InputStreamReader(new FileInputStream(f), StandardCharsets.UTF_8)) { p.load(r); }
            String name = f.getName().replace(".properties", "");
            try {
                check(p);
                System.out.println("OK " + name);
            } catch (Fail e) {
                System.out.println("FAIL " + name + ": " + e.getMessage());
            } catch (Exception e) {
                System.out.println("FAIL " + name + ": " + e);
            }
        }
    }

    static String get(Properties p, String k) { return p.getProperty(k); }

    static void check(Properties p) throws Exception {
        for (String k : p.stringPropertyNames())
            if (!k.startsWith("expect.") && p.getProperty(k).contains("${"))
                throw new Fail(k + " holds an unresolved variable: " + p.getProperty(k));
        if (!Objects.equals(get(p, "bootstrap.servers"), get(p, "expect.bootstrap.servers")))
            throw new Fail("bootstrap.servers " + get(p, "bootstrap.servers") + " is not " + get(p, "expect.bootstrap.servers"));
        String protocol = p.getProperty("security.protocol", "PLAINTEXT");
        if (!protocol.equals(get(p, "expect.security.protocol")))
            throw new Fail("security.protocol " + protocol + " is not " + get(p, "expect.security.protocol"));
        if (protocol.startsWith("SASL_")) sasl(p);
        if (protocol.endsWith("SSL")) ssl(p, protocol);
    }

    static void sasl(Properties p) throws Exception {
        if (!Objects.equals(get(p, "sasl.mechanism"), get(p, "expect.sasl.mechanism")))
            throw new Fail("sasl.mechanism " + get(p, "sasl.mechanism") + " is not " + get(p, "expect.sasl.mechanism"));
        String jaas = get(p, "sasl.jaas.config");
        if (jaas == null) throw new Fail("no sasl.jaas.config");
        Path file = Files.createTempFile("jaas", ".conf");
        try {
            Files.writeString(file, "KafkaClient {\n  " + jaas + "\n};\n");
            Configuration conf = Configuration.getInstance("JavaLoginConfig", new java.security.URIParameter(file.toUri()));
            AppConfigurationEntry[] entries = conf.getAppConfigurationEntry("KafkaClient");
            if (entries == null || entries.length != 1) throw new Fail("sasl.jaas.config must hold one login module");
            Map<String, ?> options = entries[0].getOptions();
            if (!Objects.equals(options.get("username"), get(p, "expect.sasl.username")))
                throw new Fail("JAAS username " + options.get("username") + " is not " + get(p, "expect.sasl.username"));
            if (!Objects.equals(options.get("password"), get(p, "expect.sasl.password")))
                throw new Fail("JAAS password is not the expected cluster's");
        } catch (SecurityException e) {
            throw new Fail("sasl.jaas.config does not parse: " + e.getMessage());
        } finally {
            Files.deleteIfExists(file);
        }
    }

    static void ssl(Properties p, String protocol) throws Exception {
        KeyStore trust = truststore(p.getProperty("ssl.truststore.type", "JKS"), get(p, "ssl.truststore.location"),
                get(p, "ssl.truststore.password"), get(p, "ssl.truststore.certificates"));
        Set<String> anchors = new TreeSet<>();
        if (trust != null)
            for (String a : Collections.list(trust.aliases()))
                if (trust.isCertificateEntry(a)) anchors.add(sha256(trust.getCertificate(a)));
        String expectCa = get(p, "expect.ca.sha256");
        if (!anchors.contains(expectCa))
            throw new Fail("the truststore does not trust the expected cluster's CA (it holds " + anchors.size() + " other certificate(s))");
        if (anchors.size() != 1)
            throw new Fail("the truststore trusts " + anchors.size() + " CAs; only the expected cluster's is wanted");
        KeyStore keys = keystore(p.getProperty("ssl.keystore.type", "JKS"), get(p, "ssl.keystore.location"),
                get(p, "ssl.keystore.password"), get(p, "ssl.key.password"), get(p, "ssl.keystore.key"),
                get(p, "ssl.keystore.certificate.chain"));
        String presented = "none";
        if (keys != null) {
            for (String a : Collections.list(keys.aliases()))
                if (keys.isKeyEntry(a)) {
                    char[] kp = Optional.ofNullable(get(p, "ssl.key.password"))
                            .or(() -> Optional.ofNullable(get(p, "ssl.keystore.password"))).orElse("").toCharArray();
                    if (keys.getKey(a, kp) == null) throw new Fail("key entry " + a + " does not open");
                    presented = sha256(keys.getCertificateChain(a)[0]);
                }
        }
        String expectClient = get(p, "expect.client.sha256");
        // Over SASL_SSL the principal comes from SASL: a leftover certificate decides nothing.
        if (!(protocol.equals("SASL_SSL") && expectClient.equals("none")) && !presented.equals(expectClient))
            throw new Fail("the client certificate presented is " + (presented.equals("none") ? "none" : "another cluster's")
                    + ", not " + (expectClient.equals("none") ? "none" : "the expected cluster's"));
    }

    // DefaultSslEngineFactory.createTruststore (Kafka 3.8.0), then the JDK loads the store.
    static KeyStore truststore(String type, String path, String password, String certs) throws Exception {
        if (certs != null) {
            if (!type.equals("PEM")) throw new Fail("SSL trust store certs can be specified only for PEM, but trust store type is " + type + ".");
            if (path != null) throw new Fail("Both SSL trust store location and separate trust certificates are specified.");
            if (password != null) throw new Fail("SSL trust store password cannot be specified for PEM format.");
            return pemTrust(certs);
        } else if (type.equals("PEM") && path != null) {
            if (password != null) throw new Fail("SSL trust store password cannot be specified for PEM format.");
            return pemTrust(Files.readString(Path.of(path)));
        } else if (path == null && password != null) {
            throw new Fail("SSL trust store is not specified, but trust store password is specified.");
        } else if (path != null) {
            return load(type, path, password);
        }
        return null;
    }

    // DefaultSslEngineFactory.createKeystore (Kafka 3.8.0).
    static KeyStore keystore(String type, String path, String password, String keyPassword, String key, String chain) throws Exception {
        if (key != null) {
            if (!type.equals("PEM")) throw new Fail("SSL private key can be specified only for PEM, but key store type is " + type + ".");
            if (chain == null) throw new Fail("SSL private key is specified, but certificate chain is not specified.");
            if (path != null) throw new Fail("Both SSL key store location and separate private key are specified.");
            if (password != null) throw new Fail("SSL key store password cannot be specified with PEM format, only key password may be specified.");
            return pemKeys(chain, key);
        } else if (chain != null) {
            throw new Fail("SSL certificate chain is specified, but private key is not specified");
        } else if (type.equals("PEM") && path != null) {
            if (password != null) throw new Fail("SSL key store password cannot be specified with PEM format, only key password may be specified");
            String text = Files.readString(Path.of(path));
            return pemKeys(text, text);
        } else if (path == null && password != null) {
            throw new Fail("SSL key store is not specified, but key store password is specified.");
        } else if (path != null && password == null) {
            throw new Fail("SSL key store is specified, but key store password is not specified.");
        } else if (path != null) {
            return load(type, path, password);
        }
        return null;
    }

    static KeyStore load(String type, String path, String password) throws Exception {
        KeyStore ks = KeyStore.getInstance(type);
        try (InputStream in = Files.newInputStream(Path.of(path))) {
            ks.load(in, password == null ? null : password.toCharArray());
        } catch (IOException | GeneralSecurityException e) {
            throw new Fail("Failed to load SSL keystore " + path + " of type " + type + ": " + e.getMessage());
        }
        return ks;
    }

    static final Pattern BLOCK = Pattern.compile("-----BEGIN ([A-Z0-9 ]+)-----\\s*(.*?)\\s*-----END \\1-----", Pattern.DOTALL);

    static List<byte[]> blocks(String pem, String label) {
        List<byte[]> out = new ArrayList<>();
        Matcher m = BLOCK.matcher(pem);
        while (m.find())
            if (m.group(1).equals(label)) out.add(Base64.getMimeDecoder().decode(m.group(2)));
        return out;
    }

    static List<X509Certificate> certificates(String pem) throws Exception {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        List<X509Certificate> out = new ArrayList<>();
        for (byte[] der : blocks(pem, "CERTIFICATE"))
            out.add((X509Certificate) cf.generateCertificate(new ByteArrayInputStream(der)));
        if (out.isEmpty()) throw new Fail("no PEM certificate");
        return out;
    }

    static KeyStore pemTrust(String pem) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        int i = 0;
        for (X509Certificate c : certificates(pem)) ks.setCertificateEntry("ca-" + i++, c);
        return ks;
    }

    // Kafka's PemStore reads unencrypted PKCS#8 (BEGIN PRIVATE KEY) or encrypted PKCS#8 with a key password.
    static KeyStore pemKeys(String chainPem, String keyPem) throws Exception {
        List<byte[]> keys = blocks(keyPem, "PRIVATE KEY");
        if (keys.size() != 1)
            throw new Fail("the key store needs exactly one unencrypted PKCS#8 key (BEGIN PRIVATE KEY), found " + keys.size());
        PrivateKey key = null;
        for (String alg : new String[]{"RSA", "EC", "DSA"}) {
            try { key = KeyFactory.getInstance(alg).generatePrivate(new PKCS8EncodedKeySpec(keys.get(0))); break; }
            catch (Exception ignored) { }
        }
        if (key == null) throw new Fail("the private key is not a PKCS#8 key the JDK can read");
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setKeyEntry("key", key, new char[0], certificates(chainPem).toArray(new X509Certificate[0]));
        return ks;
    }

    static String sha256(java.security.cert.Certificate c) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(c.getEncoded()));
    }
}
